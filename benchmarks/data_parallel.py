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

from path_eval.results import load_results
from path_eval.results.store import write_json_atomic

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
    records = load_results(out)
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


if __name__ == "__main__":
    sys.exit(main())
