"""Data-parallel scaling: the same `eval.py run` on 1, 2, ... processes (torchrun on one host), its
wall time split into phases, and whether the records are identical.

    python -m benchmarks.data_parallel --model CKPT --data-dir DATA --suite ruler --lengths 16k \\
        --limit 25 --device cuda --batch-size 8 --processes 1,2 --out results/bench/data_parallel_h200.json

Every run is launched the same way (`torchrun --standalone --nproc_per_node N eval.py run ... --quiet`,
N = 1 included, so the launcher's start is in every wall time) with a fresh frozen-sample cache, so
each run generates its samples. Per run it records the command, the wall time of the whole launch,
each process's phases from the run's OUT/timings.json (load: the model, in a thread beside the
sample generation; samples: freezing its share and waiting for the others; load_wait: loading still
under way after that; requests: the evaluators; write: records and results), the provenance's
requests and tokens, and whether its records (provenance aside) equal the first run's. The
speed-up is the first run's wall time over each run's. A run on one process can outlast one
device command: launch it alone, then the others with `--baseline` naming its JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

from path_eval.results import load_records
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kilo, load, machine_line, ratio, source, table

ROOT = Path(__file__).resolve().parents[1]


def machine(device: str) -> dict:
    """What the runs ran on."""
    info = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "device": device}
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def launch(processes: int, run_args: list[str], work: Path) -> dict:
    """One run on `processes` processes: its command, wall time, phases and provenance counters."""
    out, cache = work / f"run{processes}", work / f"cache{processes}"
    for folder in (out, cache):  # a fresh run: nothing resumed, every sample generated
        shutil.rmtree(folder, ignore_errors=True)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes),
               str(ROOT / "eval.py"), "run", *run_args, "--out", str(out), "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PATH_EVAL_CACHE": str(cache)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the run on {processes} process(es) failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    records = load_records(out)
    first = records[0].provenance
    return {"processes": processes, "command": shlex.join(command), "wall_s": round(wall, 3),
            "phases": json.loads((out / "timings.json").read_text())["processes"],
            "run_wall_time_s": first.wall_time_s, "requests_computed": first.requests_computed,
            "tokens": first.tokens, "records": [r.model_dump(mode="json", exclude={"provenance"}) for r in records]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="checkpoint folder")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--suite", default="ruler")
    parser.add_argument("--tasks", help="comma-separated tasks of the suite (default: all)")
    parser.add_argument("--lengths", default="16k")
    parser.add_argument("--limit", type=int, default=25)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--processes", default="1,2", help="comma-separated process counts, the baseline first")
    parser.add_argument("--work", type=Path, default=Path("runs/data_parallel"), help="run folders and caches")
    parser.add_argument("--baseline", type=Path, help="an earlier JSON of this script whose runs come first "
                        "(to launch each process count in its own command)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON written")
    args = parser.parse_args(argv)
    run_args = ["--suite", args.suite, "--model", args.model, "--data-dir", args.data_dir, "--lengths", args.lengths,
                "--limit", str(args.limit), "--device", args.device, "--batch-size", str(args.batch_size),
                *(["--tasks", args.tasks] if args.tasks else [])]
    runs = json.loads(args.baseline.read_text())["runs"] if args.baseline else []
    for count in (int(n) for n in args.processes.split(",")):
        run = launch(count, run_args, args.work.resolve())
        run["speedup"] = round(runs[0]["wall_s"] / run["wall_s"], 3) if runs else 1.0
        run["records_identical"] = not runs or run["records"] == runs[0]["records"]
        runs.append(run)
        phases = ", ".join(f"{name} {max(p[name] for p in run['phases']):.1f}" for name in run["phases"][0])
        print(f"{count} process(es): {run['wall_s']:.1f} s ({run['speedup']:.2f}x; slowest process: {phases}); "
              f"records identical: {run['records_identical']}", flush=True)
    write_json_atomic({"command": shlex.join(["python", "-m", "benchmarks.data_parallel",
                                              *(sys.argv[1:] if argv is None else argv)]),
                       "machine": machine(args.device), "runs": runs}, args.out)
    return 0 if all(run["records_identical"] for run in runs) else 1


# ---------------------------------------------------------------- docs/benchmarks.md

SUITE_RUN_PAIR = ("ruler8k_dp1.json", "ruler8k_dp2.json")  # results/h200/: the same run on one and on two processes


def render_data_parallel(results: Path) -> str:
    """The runs of this script in results/bench/data_parallel_*.json: wall time and each phase of
    the slowest process, per number of processes."""
    parts = []
    for path in sorted((results / "bench").glob("data_parallel_*.json")):
        data = load(path)
        phases = list(data["runs"][0]["phases"][0])
        rows = [[str(run["processes"]), f"{run['wall_s']:.1f}", ratio(run["speedup"]),
                 *(f"{max(p[name] for p in run['phases']):.1f}" for name in phases), str(run["requests_computed"]),
                 f"{run['tokens']:,}", "yes" if run["records_identical"] else "NO"] for run in data["runs"]]
        machine = data["machine"]
        parts += [f"Source: {source(path, results)}. " + machine_line(
                      GPUs=", ".join(machine.get("gpus", [])) or None, CPUs=machine["cpus"], device=machine["device"],
                      torch=machine["torch"], Python=machine["python"]),
                  table(["processes", "wall s", "speed-up", *(f"{name} s" for name in phases), "requests", "tokens",
                         "records identical"], rows)]
    return "\n\n".join(parts) or "None committed yet (`results/bench/data_parallel_*.json`)."


def render_suite_runs(results: Path) -> str:
    """The suites' runs on a GPU in results/h200/ (each a run's results.json), and the data-parallel
    pair among them."""
    from path_eval.results.schema import ResultRecord

    paths = sorted((results / "h200").glob("*.json"))
    runs = {path.name: [ResultRecord.model_validate(r) for r in load(path)] for path in paths}
    rows = []
    for path in paths:
        records = runs[path.name]
        p = records[0].provenance
        lengths = ", ".join(kilo(n) for n in sorted({r.length for r in records if r.length is not None}))
        rows.append([source(path, results), records[0].suite, lengths, str(p.limit), str(len(records)),
                     str(p.requests_computed), f"{p.tokens:,}", f"{p.wall_time_s:.1f}", f"{p.tokens_per_second:,.0f}",
                     str(p.processes), f"{max(r.value for r in records):g}"])
    first = runs[paths[0].name][0].provenance
    parts = [f"Sources: `results/h200/*.json`. Machine as the provenance records it: device {first.device}, "
             f"{first.dtype}, attention backend {first.attention_backend}, batch size {first.batch_size}, torch "
             f"{first.torch_version}, transformers {first.transformers_version}, lm-eval {first.lm_eval_version}, "
             f"Python {first.python_version}; model: {first.variant}, random weights.",
             table(["run", "suite", "length", "limit", "records", "requests", "tokens", "wall s", "tok/s",
                    "processes", "highest value"], rows)]
    one, two = (runs.get(name) for name in SUITE_RUN_PAIR)
    if one and two:
        same = [r.model_dump(exclude={"provenance"}) for r in one] == [r.model_dump(exclude={"provenance"}) for r in two]
        speedup = one[0].provenance.wall_time_s / two[0].provenance.wall_time_s
        parts.append(f"Data parallelism: `{SUITE_RUN_PAIR[1]}` ran on {two[0].provenance.processes} processes "
                     f"and `{SUITE_RUN_PAIR[0]}` on {one[0].provenance.processes}: a {speedup:.2f}x speed-up of "
                     "the wall time; the records other than provenance are "
                     + ("identical." if same else "NOT identical."))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
