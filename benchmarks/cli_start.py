"""The command line's first second: how long `eval.py list`, every command's --help and every refusal of
bad arguments take, each in a fresh interpreter as a user starts it (issue 47: each under 1 s on this
project's 2-core CPU).

    python -m benchmarks.cli_start --out results/bench/cli_start_cpu.json

None of these commands imports torch, transformers, lm-eval, datasets or triton
(tests/cli/test_import_weight.py reads that from `-X importtime`, over the same invocations); this
measures what they cost all the same: the interpreter, pydantic, numpy, the suites and kinds the
parser names. Each invocation runs once untimed (the file cache) and then `--repeats` times; the
median and the slowest wall seconds are kept with its exit code. Run it on an idle machine: on two
cores, a second busy process slows every start.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.markdown import load, source, table
from path_eval.atomic_files import write_json_atomic

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.0

# Bad arguments of every kind the command line refuses before it needs a model, each one line
REFUSALS = [
    ["run", "--suite", "no_such_suite", "--model", "zoo"],
    ["run", "--suite", "ci", "--model", "zoo", "--tasks", "no_such_task"],
    ["run", "--suite", "ci", "--model", "zoo", "--lengths", "abc"],
    ["run", "--suite", "ci", "--model", "zoo", "--batch-size", "0"],
    ["run", "--suite", "ci", "--model", "zoo", "--device", "tpu"],
    ["run", "--suite", "ci", "--model", "zoo", "--attention", "no_such_backend"],
    ["run", "--suite", "ci", "--model", "zoo", "--dtype", "float7"],
    ["run", "--suite", "ci", "--model", "zoo:no_such_model"],
    ["run", "--suite", "ci", "--model", "/no/such/checkpoint"],
    ["run", "--suite", "ci", "--model", "zoo", "--out", "/dev/null"],
    ["run", "--suite", "ruler", "--model", "zoo", "--data-dir", "/no/such/folder"],
    ["download", "--suite", "no_such_suite"],
    ["report", "/no/such/run"],
    ["check", "/no/such/results.json", "/no/such/baseline.json"],
    ["compare", "/no/such/run", "/no/such/other"],
    ["rescore", "/no/such/run"],
    ["inspect", "/no/such/checkpoint"],
    ["generate", "--model", "/no/such/checkpoint", "--prompt", "hi"],
]


def help_commands() -> list[str | None]:
    """None (the top level) and every command whose --help is ours (lm-eval's is lm-eval's)."""
    from path_eval.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    return [None, *[name for name in commands if name != "lm-eval"]]


def invocations() -> list[tuple[str, list[str], int]]:
    """(kind, arguments, the exit code expected) of every invocation the goal names."""
    helps = [("help", [*([command] if command else []), "--help"], 0) for command in help_commands()]
    return [("list", ["list"], 0), *helps, *[("refusal", arguments, 2) for arguments in REFUSALS]]


def time_once(arguments: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "eval.py"), *arguments], cwd=ROOT, capture_output=True)
    return time.perf_counter() - start, done.returncode


def measure(arguments: list[str], repeats: int) -> dict:
    time_once(arguments)
    runs = [time_once(arguments) for _ in range(repeats)]
    return {"median_s": statistics.median(s for s, _ in runs), "slowest_s": max(s for s, _ in runs),
            "exit_codes": sorted({code for _, code in runs})}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each invocation (default 5)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, not {args.repeats}")
    records = []
    for kind, arguments, expected in invocations():
        record = {"kind": kind, "arguments": arguments, "expected_exit": expected} | measure(arguments, args.repeats)
        records.append(record)
        print(f"{record['median_s']:.2f} s (slowest {record['slowest_s']:.2f}) exit {record['exit_codes']}: "
              f"eval.py {shlex.join(arguments)}", flush=True)
    meta = {"command": shlex.join(["python", "-m", "benchmarks.cli_start", *argv]),
            "machine": f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)",
            "python": platform.python_version(), "repeats": args.repeats, "target_s": TARGET_S}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic({"meta": meta, "records": records}, args.out)
    return 0


def render_cli_start(results: Path) -> str:
    """Each results/bench/cli_start_*.json: every invocation's median and slowest start, against 1 s."""
    parts = []
    for path in sorted((results / "bench").glob("cli_start_*.json")):
        data = load(path)
        meta, records = data["meta"], data["records"]
        rows = [[f"`eval.py {shlex.join(r['arguments'])}`", ", ".join(map(str, r["exit_codes"])),
                 f"{r['median_s']:.2f}", f"{r['slowest_s']:.2f}",
                 "yes" if r["slowest_s"] < meta["target_s"] and r["exit_codes"] == [r["expected_exit"]] else "no"]
                for r in records]
        met = sum(row[-1] == "yes" for row in rows)
        slowest = max(records, key=lambda r: r["median_s"])
        parts += [f"Source: {source(path, results)}. Machine: {meta['machine']}, Python {meta['python']}; "
                  f"`{meta['command']}`: each invocation once untimed, then {meta['repeats']} times.",
                  f"{met} of {len(rows)} invocations under {meta['target_s']:g} s in every timed run, with the "
                  f"exit code expected; the slowest median: {slowest['median_s']:.2f} s "
                  f"(`eval.py {shlex.join(slowest['arguments'])}`).",
                  table(["invocation", "exit", "median s", "slowest s", f"under {meta['target_s']:g} s"], rows)]
    return "\n\n".join(parts) or ("No record yet (`results/bench/cli_start_*.json`): `python -m benchmarks.cli_start "
                                   "--out results/bench/cli_start_cpu.json` writes one.")


if __name__ == "__main__":
    sys.exit(main())
