"""The host's own cost of a suite run: `eval.py run` with the models' arithmetic taken out.

    python -m benchmarks.host_cost --data-dir DATA --out results/bench/host_cost_cpu.json

Issue 47 asks small models to keep the GPU busy; a zoo model's forward takes less time than the
harness and lm-eval spend around it, so the GPU waits on the host. That host share can be measured
on any CPU, without a GPU: here every path-eval model (`CausalDecoder`, the zoo's Llama too through
`--attention torch`) answers a forward at once with fixed logits, the token `--token` until `--end-after`
decoding steps, then the end-of-sequence token (so generation runs that many steps and stops, as a
model answering in a few words would). Everything else is the real run: encoding the prompts, lm-eval's
tasks and requests, the resume cache, generation's loop and looks, the per-sample records. The
record holds the run's phases and each model's (`suite_busy.per_model`): a model's requests phase
here is the host time its requests cost beside the model. Default: the zoo study's generation tasks
(RULER and PhoneBook, 64 samples, 1K-16K) on the four text models, batch 32; the samples' caches as
this machine has them (frozen first when absent: then the first model's `samples` phase holds it).
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.end_to_end import machine
from benchmarks.markdown import load, seconds, source, table
from benchmarks.suite_busy import per_model
from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError
from path_eval.plan.stored import stored_plan
from path_eval.results.provenance import git_revision

ROOT = Path(__file__).resolve().parents[1]


def stand_in_run(end_after: int, token: int, argv: list[str]) -> int:
    """`eval.py run argv` in this process, every `CausalDecoder` forward answered at once."""
    import torch

    from path_eval.cli import main
    from path_eval.models import generation, modeling
    from path_eval.models.modeling import CausalLMOutput

    def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=None, logits_to_keep=0,
                mask_has_padding=None):
        cache = past_key_values if past_key_values is not None else generation.DecoderCache(1)
        # decoding steps so far: a step asks for every position's logits (its one), a prefill chunk for its last
        cache.stand_in_steps = getattr(cache, "stand_in_steps", 0) + (logits_to_keep == 0)
        logits = torch.zeros(input_ids.shape[0], logits_to_keep or input_ids.shape[1], self.config.vocab_size)
        end = self.config.eos_token_id
        chosen = end if cache.stand_in_steps >= end_after and isinstance(end, int) else token
        logits[..., chosen] = 1.0
        return CausalLMOutput(logits, cache if use_cache else None)

    modeling.CausalDecoder.forward = forward
    generation.reserve_decoding = lambda cache, tokens: None  # the stand-in's cache holds no layer
    return main(["run", *argv])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="zoo_study")
    parser.add_argument("--model", default="zoo")
    parser.add_argument("--tasks", default="niah*,vt,phonebook")
    parser.add_argument("--lengths")
    parser.add_argument("--data-dir", type=Path, required=True, help="the data dir holding the essays")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--end-after", type=int, default=12, help="decoding steps before the stand-in ends a row")
    parser.add_argument("--token", type=int, default=5, help="the token the stand-in answers before that")
    parser.add_argument("--work", type=Path, default=Path("/tmp/host_cost"))
    parser.add_argument("--label", help="a name for this record's code or setting, kept in the record")
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def run_arguments(args, out: Path) -> list[str]:
    argv = ["--suite", args.suite, "--model", args.model, "--attention", "torch", "--device", "cpu",
            "--batch-size", str(args.batch_size), "--tasks", args.tasks, "--data-dir", str(args.data_dir),
            "--out", str(out), "--quiet"]
    return argv + (["--lengths", args.lengths] if args.lengths else [])


def measure(args) -> dict:
    out = args.work / "run"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "benchmarks.host_cost", "--stand-in-run", str(args.end_after), str(args.token),
               *run_arguments(args, out)]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise PathEvalError(f"the run failed (exit {done.returncode}): {done.stderr.strip()[-600:]}")
    timings = json.loads((out / "timings.json").read_text())
    spans = timings["spans"][0]
    names = [model.name for model in stored_plan(out).evaluated_models()]
    models = [{"model": m["model"], "phases": m["phases"]} for m in per_model(spans, names, [])]
    return {"wall_s": round(wall, 3), "phases": timings["processes"][0], "models": models,
            "requests_s": round(sum(end - start for name, start, end in spans if name == "requests"), 3)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--stand-in-run"]:
        return stand_in_run(int(argv[1]), int(argv[2]), argv[3:])
    args = parse_args(argv)
    try:
        run = measure(args)
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    record = {"meta": {"command": "python -m benchmarks.host_cost " + shlex.join(argv), "machine": machine("cpu"),
                       "revision": git_revision(), "label": args.label, "end_after": args.end_after},
              "run": run}
    write_json_atomic(record, args.out)
    later = run["models"][1:]
    print(f"{args.suite}: requests {run['requests_s']:.1f} s over {len(run['models'])} models"
          + (f"; after the first, {min(m['phases']['requests'] for m in later):.1f}-"
             f"{max(m['phases']['requests'] for m in later):.1f} s each" if later else ""))
    return 0


def render_host_cost(results: Path) -> str:
    """Each results/bench/host_cost_*.json: every model's phases with its arithmetic taken out."""
    parts = []
    for path in sorted((results / "bench").glob("host_cost_*.json")):
        data = load(path)
        meta, run = data["meta"], data["run"]
        label = f" Code: {meta['label']}." if meta.get("label") else ""
        parts.append(f"Source: {source(path, results)}. Machine: {meta['machine']}; revision {meta['revision']};"
                     f" rows end after {meta['end_after']} steps.{label} Run: wall {seconds(run['wall_s'])} s,"
                     f" requests {seconds(run['requests_s'])} s.")
        parts.append(table(["model", "tokenizer s", "samples s", "requests s", "records s"],
                           [[m["model"], *(seconds(m["phases"].get(p)) for p in ("tokenizer", "samples", "requests",
                                                                                 "records"))]
                            for m in run["models"]]))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
