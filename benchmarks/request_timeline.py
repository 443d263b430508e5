"""Where each model's requests phase goes, batch by batch: lm-eval's own work around the model's
calls, the adapter's work between and around its batches, and each batch's generation, split on a
GPU into the GPU's span and the host's time beyond it.

    python -m benchmarks.request_timeline --data-dir DATA --out results/bench/request_timeline_h100.json

Issue 47 asks small models to keep the GPU busy. The zoo study's text models spend about twice
their GPU time in their requests on an H100 (`benchmarks.suite_busy`), and the host-side savings
`benchmarks.host_cost` measures on a CPU did not show there: the host's time has to be found on the
GPU host itself. cProfile inflates every Python-heavy part; here a real `eval.py run` in this process
(default: `zoo:path` on the zoo study's generation tasks, batch 32) is timed at three seams only:
the adapter's `generate_until` (one call per model and kind, what lm-eval asks of the model), each
batch (`_generate_batch`) and each batch's generation (`_generate`: padding, the copy to the device,
`generate` or a transformers model's own, and the copy of the new tokens back, which waits for the
GPU), with a CUDA event recorded on the model's GPU as the generation starts and one as it returns.
A model's requests phase (the run's own timings.json) then splits into

- `lm_eval_s`: outside `generate_until`: lm-eval building the tasks and requests, filters, metrics
  and sample logs, and ours around it (frozen rows, per-sample logs);
- `between_batches_s`: inside `generate_until` but outside every batch: encoding the prompts,
  collating, the resume cache's lookups;
- `around_generate_s`: inside each batch but outside its generation: decoding the text, cutting it
  at the stop strings, the resume cache's rows;
- `generate_s`: the generation as the host saw it, of which `gpu_span_s` lies between its two
  events on the GPU (the GPU's work for the batch, with any gap the host left inside it) and
  `generate_beyond_gpu_s` is the rest: time before the GPU reached the start event (work queued
  before the generation) or after it reached the end event (the host's own work after its last
  wait). A generation that starts on an idle GPU and ends with the copy of its tokens (which waits
  for the GPU) has a span equal to its host time, so that on such a GPU host the span shows where
  the GPU was held, not whether it was busy: gaps the host leaves inside a generation show in
  nvidia-smi's utilisation (`benchmarks.suite_busy`), not here.

The parts are the phase's partition by construction (`lm_eval_s` is what the model's calls leave);
what is measured is which calls fall in which model's phase and how long each took. On a CPU there
are no events (`gpu_span_s` is None). The run's caches are as the machine has them; a cold run's
compiling would fill the generations.
"""
from __future__ import annotations

import argparse
import functools
import json
import shlex
import shutil
import sys
import time
from pathlib import Path

from benchmarks.end_to_end import machine
from benchmarks.markdown import load, ratio, seconds, source, table
from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError
from path_eval.plan.stored import stored_plan
from path_eval.results.provenance import git_revision

PARTS = ("lm_eval_s", "between_batches_s", "around_generate_s", "generate_s")


class Seams:
    """The instrumented calls: (what, wall-clock start, seconds, GPU events or None) in call order."""

    def __init__(self):
        self.calls: list[list] = []
        self.originals: list[tuple] = []

    def wrap(self, owner, name: str, what: str, device_of=None) -> None:
        """Time `owner.name` on every call from now on; with `device_of(args)` giving a CUDA device,
        also a CUDA event at each end, on that device's current stream (the model's GPU, which need
        not be the current device: the run sets it in the loading thread only)."""
        import torch

        inner = getattr(owner, name)
        self.originals.append((owner, name, inner))

        def record(event, device) -> None:
            with torch.cuda.device(device):
                event.record()

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            device = device_of(args) if device_of is not None else None
            pair = None
            if device is not None and device.type == "cuda":
                pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                record(pair[0], device)
            began, start = time.time(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                if pair is not None:
                    record(pair[1], device)
                self.calls.append([what, began, time.perf_counter() - start, pair])
        setattr(owner, name, timed)

    def unwrap(self) -> None:
        for owner, name, inner in reversed(self.originals):
            setattr(owner, name, inner)

    def resolved(self) -> list[tuple[str, float, float, float | None]]:
        """(what, start, seconds, GPU span seconds or None), the events read once the run is over."""
        for *_, pair in self.calls:
            if pair is not None:
                pair[1].synchronize()
        return [(what, began, secs, None if pair is None else pair[0].elapsed_time(pair[1]) / 1e3)
                for what, began, secs, pair in self.calls]


def eval_run(argv: list[str]) -> int:
    from path_eval.cli import main

    return main(["run", *argv])


def instrumented_run(argv: list[str], run) -> tuple[int, list]:
    """`run(argv)` (`eval.py run argv` in this process) with the seams timed; returns (exit code,
    resolved calls)."""
    from path_eval.lm.adapter import PathEvalLM

    seams = Seams()
    seams.wrap(PathEvalLM, "generate_until", "generate_until")
    seams.wrap(PathEvalLM, "_generate_batch", "batch")
    seams.wrap(PathEvalLM, "_generate", "generate", device_of=lambda args: args[0]._device)
    try:
        code = run(argv)
    finally:
        seams.unwrap()
    return code, seams.resolved()


def split_requests(requests: tuple[float, float], calls: list[tuple]) -> dict:
    """One model's requests span (start, end; Unix seconds) split into PARTS by the calls inside it."""
    start, end = requests
    inside = [c for c in calls if start <= c[1] <= end]

    def total(what):
        return sum(secs for kind, _, secs, _ in inside if kind == what)
    spans = [gpu for kind, _, _, gpu in inside if kind == "generate" and gpu is not None]
    generate = total("generate")
    gpu = sum(spans) if spans else None
    return {"requests_s": round(end - start, 3), "lm_eval_s": round(end - start - total("generate_until"), 3),
            "between_batches_s": round(total("generate_until") - total("batch"), 3),
            "around_generate_s": round(total("batch") - generate, 3), "generate_s": round(generate, 3),
            "gpu_span_s": None if gpu is None else round(gpu, 3),
            "generate_beyond_gpu_s": None if gpu is None else round(generate - gpu, 3),
            "batches": sum(kind == "batch" for kind, *_ in inside),
            "calls": {what: sum(kind == what for kind, *_ in inside) for what in ("generate_until", "generate")}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="zoo_study")
    parser.add_argument("--model", default="zoo:path")
    parser.add_argument("--tasks", default="niah*,vt,phonebook")
    parser.add_argument("--lengths")
    parser.add_argument("--data-dir", type=Path, required=True, help="the data dir holding the essays")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--attention", help="eval.py run's --attention (triton: the zoo's Llama on the harness's model)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--work", type=Path, default=Path("/tmp/request_timeline"))
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def run_arguments(args, out: Path) -> list[str]:
    argv = ["--suite", args.suite, "--model", args.model, "--device", args.device, "--batch-size",
            str(args.batch_size), "--tasks", args.tasks, "--data-dir", str(args.data_dir), "--out", str(out), "--quiet"]
    return argv + [f for option in ("lengths", "attention") if getattr(args, option)
                   for f in (f"--{option}", getattr(args, option))]


class RunFailed(Exception):
    """The run ended with this exit code, having said why itself."""


def measure(args) -> dict:
    out = args.work / "run"
    shutil.rmtree(out, ignore_errors=True)  # a fresh run: a resumed one computes nothing
    began = time.perf_counter()
    code, calls = instrumented_run(run_arguments(args, out), eval_run)
    wall = time.perf_counter() - began
    if code != 0:
        raise RunFailed(code)
    spans = json.loads((out / "timings.json").read_text())["spans"][0]
    names = [model.name for model in stored_plan(out).evaluated_models()]
    requests = [(start, end) for phase, start, end in spans if phase == "requests"]
    if len(requests) != len(names):
        raise PathEvalError(f"the run timed {len(requests)} requests phases for {len(names)} models")
    return {"wall_s": round(wall, 3), "models": [{"model": name, **split_requests(span, calls)}
                                                 for name, span in zip(names, requests)]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        run = measure(args)
    except RunFailed as failed:
        return failed.args[0]
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    record = {"meta": {"command": "python -m benchmarks.request_timeline " + shlex.join(argv),
                       "machine": machine(args.device), "revision": git_revision(), "batch_size": args.batch_size},
              "run": run}
    write_json_atomic(record, args.out)
    for model in run["models"]:
        print(f"{model['model']}: requests {model['requests_s']:.1f} s = " + ", ".join(
            f"{part.removesuffix('_s')} {model[part]:.1f}" for part in PARTS)
              + ("" if model["gpu_span_s"] is None else f" (GPU span {model['gpu_span_s']:.1f})"))
    return 0


AB_SIDES = ("baseline", "shipped")
TIMELINE_HEADER = ["requests s", "lm-eval s", "between batches s", "around generate s", "generate s", "GPU span s",
                   "generate beyond GPU s", "batches"]


def timeline_cells(model: dict) -> list[str]:
    return [*(seconds(model[key]) for key in ("requests_s", *PARTS, "gpu_span_s", "generate_beyond_gpu_s")),
            str(model["batches"])]


def ab_side(path: Path) -> str | None:
    """Which side of a `gpu_session.sh timeline-ab` pair a request-timeline record is, or None for
    one run on its own: the pair's files are request_timeline_<gpu>_<side><label>.json."""
    parts = path.stem.split("_")
    return parts[3] if len(parts) > 3 and parts[3] in AB_SIDES else None


def render_request_timeline(results: Path) -> str:
    """Each results/bench/request_timeline_*.json run on its own: every model's requests phase
    split at the seams (the two sides of an A/B are `render_timeline_ab`'s)."""
    parts = []
    for path in sorted((results / "bench").glob("request_timeline_*.json")):
        if ab_side(path) is not None:
            continue
        data = load(path)
        meta = data["meta"]
        parts.append(f"Source: {source(path, results)}. Machine: {meta['machine']}; revision {meta['revision']}; "
                     f"batch {meta['batch_size']}; `{meta['command']}`.")
        parts.append(table(["model", *TIMELINE_HEADER],
                           [[m["model"], *timeline_cells(m)] for m in data["run"]["models"]]))
    return "\n\n".join(parts) or ("No record yet (`results/bench/request_timeline_*.json`): `python -m "
                                  "benchmarks.request_timeline --data-dir DATA --out FILE` on a GPU host.")


def render_timeline_ab(results: Path) -> str:
    """Each results/bench/timeline_ab_<gpu><label>.json (`gpu_session.sh timeline-ab`): both sides'
    request timelines, model by model, then shipped over baseline, and how many of the logged
    generations and scores differ between the two runs."""
    parts = []
    for path in sorted((results / "bench").glob("timeline_ab_*.json")):
        gpu, _, label = path.stem.removeprefix("timeline_ab_").partition("_")
        label = f"_{label}" if label else ""
        sides = {side: results / "bench" / f"request_timeline_{gpu}_{side}{label}.json" for side in AB_SIDES}
        missing = [side.name for side in sides.values() if not side.is_file()]
        if missing:
            raise PathEvalError(f"{path.name} has no {' or '.join(missing)} beside it: commit both sides' "
                                "request timelines with it")
        ab, runs = load(path), {side: load(file) for side, file in sides.items()}
        meta = runs["shipped"]["meta"]
        parts.append(f"Source: {source(path, results)} and its two request timelines. Machine: {meta['machine']}; "
                     f"revision {meta['revision']}; batch {meta['batch_size']}; the shipped side "
                     f"`{meta['command']}` (the baseline the same, in a work folder of its own). "
                     f"{ab['meta']['note']}.")
        rows = []
        for side in AB_SIDES:
            rows += [[m["model"], side, *timeline_cells(m)] for m in runs[side]["run"]["models"]]
        for base, shipped in zip(*(runs[side]["run"]["models"] for side in AB_SIDES)):
            rows.append([shipped["model"], "shipped / baseline",
                         *("-" if not base[key] or shipped[key] is None else ratio(shipped[key] / base[key])
                           for key in ("requests_s", *PARTS, "gpu_span_s")), "", ""])
        parts.append(table(["model", "side", *TIMELINE_HEADER], rows))
        generations = [g for pair in ab["pairs"] for g in pair["generations"]]
        cells = [c for pair in ab["pairs"] for c in pair["cells"]]
        parts.append(f"Generations that differ between the two runs: {sum(g['differ'] for g in generations)} of "
                     f"{sum(g['samples'] for g in generations)} (in {len(generations)} logs); scores that differ: "
                     f"{sum(c['b_minus_a'] != 0 for c in cells)} of {len(cells)}.")
    return "\n\n".join(parts) or ("No record yet (`results/bench/timeline_ab_*.json`): `AB_BASELINE=FOLDER bash "
                                  "benchmarks/gpu_session.sh timeline-ab` on a GPU host.")


if __name__ == "__main__":
    raise SystemExit(main())
