"""How busy a suite run keeps the GPU: one `eval.py run` in one process, the GPU's utilisation
sampled beside it, matched to the run's own phases.

    python -m benchmarks.suite_busy --data-dir DATA --out results/bench/zoo_study_busy_h200.json

Default: the zoo study (`--suite zoo_study --model zoo`: the eight zoo models, 64 samples, 1x-16x),
batch 32, on the GPU, into a fresh run folder (every request computed; the frozen-sample and Triton
caches as this machine has them, said in the record). A thread reads nvidia-smi's `utilization.gpu`
(the share of its sampling period in which a kernel ran) every --sample-ms and stamps each reading
with the time it arrived; the run's timings.json holds the Unix-time span of each phase
(`path_eval.runner.processes.PhaseTimes`). The record: the run's wall time and phases, the mean
utilisation over its requests spans and over the whole run, against issue 47's targets (the whole
zoo_study in one process within 5 minutes; the GPU busy at least 60% of its requests phase).
`--sampler` replaces nvidia-smi by any command that prints one utilisation percentage a line (the
tests' stand-in; another vendor's tool). `--budget-s` stops a run that outlasts it (SIGTERM, which
the run answers by exiting) and records it as stopped, with the phases of the models it finished
(the run writes timings.json after each model): a study slower than one device call still leaves
its measurement.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.end_to_end import machine
from benchmarks.markdown import load, percent, seconds, source, table
from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError
from path_eval.plan.stored import stored_plan
from path_eval.results.provenance import git_revision

ROOT = Path(__file__).resolve().parents[1]
WALL_TARGET_S = 300.0
BUSY_TARGET = 0.60


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/zoo_study_busy_h200.json"))
    parser.add_argument("--suite", default="zoo_study")
    parser.add_argument("--model", default="zoo")
    parser.add_argument("--tasks", help="eval.py run's --tasks (default: the suite's)")
    parser.add_argument("--lengths", help="eval.py run's --lengths (default: the suite's)")
    parser.add_argument("--limit", type=int, help="eval.py run's --limit (default: the suite's samples)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--data-dir", type=Path, help="offline data folder (the zoo study's essays)")
    parser.add_argument("--attention", help="eval.py run's --attention (triton: a Llama too runs on the harness's "
                                            "RoPE model, see docs/models.md; default: each model's own)")
    parser.add_argument("--work", type=Path, default=Path("runs/suite_busy"), help="the run folder goes here")
    parser.add_argument("--sample-ms", type=int, default=200)
    parser.add_argument("--sampler", help="a command printing one utilisation percentage a line (default: nvidia-smi)")
    parser.add_argument("--budget-s", type=float, help="stop the run after this many seconds and record what it did")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.sample_ms < 20 or (args.limit is not None and args.limit < 1):
        raise PathEvalError("--batch-size and --limit take 1 or more, --sample-ms 20 or more")
    if args.budget_s is not None and args.budget_s <= 0:
        raise PathEvalError(f"--budget-s {args.budget_s:g}: give a positive number of seconds")
    args.work = args.work.resolve()
    return args


def sampler_command(args) -> list[str]:
    if args.sampler:
        return shlex.split(args.sampler)
    if shutil.which("nvidia-smi") is None:
        raise PathEvalError("nvidia-smi is not on PATH: this bench samples an NVIDIA GPU's utilisation "
                            "(give --sampler for another tool)")
    return ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0",
            "-lms", str(args.sample_ms)]


class Sampler:
    """The sampler command in the background, each reading stamped with the Unix time it arrived."""

    def __init__(self, command: list[str]):
        self.readings: list[tuple[float, float]] = []
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                self.readings.append((time.time(), float(line.strip().split(",")[-1])))
            except ValueError:
                continue

    def stop(self) -> list[tuple[float, float]]:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.thread.join(timeout=10)
        return self.readings


def mean_within(readings: list[tuple[float, float]], spans: list[tuple[float, float]]) -> tuple[float | None, int]:
    """The mean reading (as a fraction) of those stamped inside any span, and how many there were."""
    inside = [value for stamp, value in readings if any(start <= stamp <= end for start, end in spans)]
    return (sum(inside) / len(inside) / 100 if inside else None), len(inside)


def per_model(spans: list, names: list[str], readings: list[tuple[float, float]]) -> list[dict]:
    """Each finished model's phases (seconds, its own spans: a model's begin with its tokenizer; the run
    writes them once the model is done) and the GPU's mean utilisation over its requests, in the order
    the run took them (`names`)."""
    groups: list[list] = []
    for span in spans:
        if span[0] == "tokenizer":
            groups.append([])
        if groups and span[0] != "write":
            groups[-1].append(span)
    rows = []
    for name, group in zip(names, groups):
        busy, readings_in = mean_within(readings, [(start, end) for phase, start, end in group if phase == "requests"])
        phases = {phase: round(sum(end - start for p, start, end in group if p == phase), 3)
                  for phase in dict.fromkeys(phase for phase, _, _ in group)}
        rows.append({"model": name, "phases": phases, "busy_requests": None if busy is None else round(busy, 4),
                     "readings_in_requests": readings_in})
    return rows


def run_command(args, out: Path) -> list[str]:
    command = [sys.executable, str(ROOT / "eval.py"), "run", "--suite", args.suite, "--model", args.model,
               "--device", args.device, "--batch-size", str(args.batch_size), "--out", str(out), "--quiet"]
    for option in ("tasks", "lengths", "limit", "data_dir", "attention"):
        if getattr(args, option) is not None:
            command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    return command


def measure(args) -> dict:
    out = args.work / "run"
    shutil.rmtree(out, ignore_errors=True)
    command = run_command(args, out)
    sampler = Sampler(sampler_command(args))
    began = time.time()
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stopped = False
    try:
        _, stderr = run.communicate(timeout=args.budget_s)
    except subprocess.TimeoutExpired:
        stopped = True
        run.terminate()  # the run's SIGTERM handling drops the request in hand and exits
        try:
            _, stderr = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            _, stderr = run.communicate()
    ended = time.time()
    readings = sampler.stop()
    if run.returncode != 0 and not stopped:
        raise PathEvalError(f"the run failed (exit {run.returncode}): {stderr.strip()[-600:]}")
    if not readings:
        raise PathEvalError(f"the sampler ({' '.join(sampler_command(args))}) printed no reading")
    timings_path = out / "timings.json"
    if not timings_path.is_file():  # stopped before its first model finished
        raise PathEvalError(f"the run was stopped at --budget-s {args.budget_s:g} before it finished a model: "
                            "nothing to match the readings to; give a longer budget")
    timings = json.loads(timings_path.read_text())
    spans = timings["spans"][0]
    requests = [(start, end) for name, start, end in spans if name == "requests"]
    busy_requests, in_requests = mean_within(readings, requests)
    busy_run, in_run = mean_within(readings, [(began, ended)])
    plan = stored_plan(out)  # the run writes it first; a stand-in run may not
    names = [model.name for model in plan.evaluated_models()] if plan else []
    return {"wall_s": round(ended - began, 3), "stopped_at_budget_s": args.budget_s if stopped else None,
            "models_finished": len(requests), "phases": timings["processes"][0],
            "requests_s": round(sum(end - start for start, end in requests), 3),
            "busy_requests": None if busy_requests is None else round(busy_requests, 4),
            "busy_run": None if busy_run is None else round(busy_run, 4),
            "readings_in_requests": in_requests, "readings_in_run": in_run,
            "models": per_model(spans, names, readings),
            "targets": {"wall_s": WALL_TARGET_S, "busy_requests": BUSY_TARGET},
            "caches": "the frozen-sample and Triton caches as this machine had them",
            "command": shlex.join(command)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        sampler_command(args)  # refused before the run starts
        args.work.mkdir(parents=True, exist_ok=True)
        record = measure(args)
        meta = {"command": shlex.join(["python", "-m", "benchmarks.suite_busy", *argv]), "machine": machine(args.device),
                "suite": args.suite, "model": args.model, "batch_size": args.batch_size, "sample_ms": args.sample_ms,
                "sampler": args.sampler or "nvidia-smi utilization.gpu", "revision": git_revision()}
        write_json_atomic({"meta": meta, "run": record}, args.out)
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    busy = record["busy_requests"]
    stopped = "" if record["stopped_at_budget_s"] is None else \
        f" (stopped at the budget, {record['models_finished']} models finished)"
    print(f"{args.suite}: wall {record['wall_s']:.1f} s{stopped}, requests {record['requests_s']:.1f} s, GPU busy "
          f"{'-' if busy is None else f'{busy:.0%}'} of the requests phase ({record['readings_in_requests']} readings)")
    return 0


def render_suite_busy(results: Path) -> str:
    """Each results/bench/*_busy_*.json: the run's wall time and how busy it kept the GPU."""
    parts = []
    for path in sorted((results / "bench").glob("*_busy_*.json")):
        data = load(path)
        meta, r = data["meta"], data["run"]
        revision = f" Revision {meta['revision']}." if meta.get("revision") else ""
        parts.append(f"Source: {source(path, results)}. Machine: {meta['machine']}; `{meta['suite']}` on "
                     f"`{meta['model']}`, batch {meta['batch_size']}; {meta['sampler']} every {meta['sample_ms']} ms."
                     + revision)
        stopped = r.get("stopped_at_budget_s") is not None
        met = not stopped and r["wall_s"] <= r["targets"]["wall_s"] and \
            (r["busy_requests"] or 0) >= r["targets"]["busy_requests"]
        wall = f"stopped at {seconds(r['wall_s'])}, {r['models_finished']} models finished" if stopped else seconds(r["wall_s"])
        phases = r.get("phases", {})
        parts.append(table(["wall s", "start s", "samples s", "requests s", "busy, requests phase", "busy, whole run",
                            "readings", "targets met"],
                           [[wall, seconds(phases.get("start")), seconds(phases.get("samples")), seconds(r["requests_s"]),
                             "-" if r["busy_requests"] is None else percent(r["busy_requests"]),
                             "-" if r["busy_run"] is None else percent(r["busy_run"]),
                             str(r["readings_in_requests"]), "yes" if met else "no"]]))
        if r.get("models"):
            parts.append("By model, in the run's order:\n\n" + table(
                ["model", "tokenizer s", "samples s", "load wait s", "requests s", "records s", "busy, its requests"],
                [[m["model"], *(seconds(m["phases"].get(phase)) for phase in ("tokenizer", "samples", "load_wait",
                                                                             "requests", "records")),
                  "-" if m["busy_requests"] is None else percent(m["busy_requests"])] for m in r["models"]]))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
