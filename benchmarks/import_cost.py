"""What importing the model stack costs in a fresh interpreter, package by package.

    python -m benchmarks.import_cost --label as-installed --out results/bench/import_cost_h100.json
    python -m compileall -q /tmp/site
    python -m benchmarks.import_cost --label byte-compiled --out results/bench/import_cost_h100.json

`import path_eval.lm` is what `eval.py run` imports before its first request (torch, transformers,
lm-eval and what they pull in), and on a GPU host it is most of a warm run's fixed cost
(`benchmarks.fixed_cost`'s `imports_alone_s`). Each series runs that import in a fresh interpreter
once apart (`first_s`: the file cache, and where the interpreter may write bytecode, the one import
that compiles), then `--repeats` times, keeping the seconds the probe's own clock gives (the
interpreter's start left out); then once more under `-X importtime`, whose self times are summed
by top-level package, and which then counts each package's source modules whose bytecode cache file
exists: a package imported from sources with no cache compiles them at every start, which
an interpreter that may not write bytecode (`PYTHONDONTWRITEBYTECODE`, a read-only folder) never
stops doing. A later series given the same `--out` is added beside the earlier ones (same machine),
so one file compares a host before and after a change (`--label` names each).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.markdown import load, source, table
from path_eval.atomic_files import check_target, make_writable, os_reason, write_json_atomic
from path_eval.errors import PathEvalError

ROOT = Path(__file__).resolve().parents[1]
IMPORT_PROBE = "import time; t = time.perf_counter(); import path_eval.lm; print(time.perf_counter() - t)"
# After importing {module}: each loaded module's top-level package, and whether its bytecode cache file exists
CACHE_PROBE = """
import importlib, json, os, sys
importlib.import_module({module!r})
seen = {{}}
for name, module in list(sys.modules.items()):
    spec = getattr(module, "__spec__", None)
    if spec is None or not spec.cached or not (spec.origin or "").endswith(".py"):
        continue
    top = name.split(".")[0]
    modules, cached = seen.get(top, (0, 0))
    seen[top] = (modules + 1, cached + os.path.exists(spec.cached))
print(json.dumps({{"dont_write_bytecode": sys.dont_write_bytecode, "packages": seen}}))
"""
SHOWN_PACKAGES = 12


def probe(env: dict, *flags: str, code: str = IMPORT_PROBE) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *flags, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise PathEvalError(f"importing path_eval.lm failed: {tail[0]}")
    return done


def import_seconds(env: dict) -> float:
    """The model stack's import alone, in a fresh process, by the probe's own clock."""
    return float(probe(env).stdout.strip().splitlines()[-1])


def import_report(env: dict, module: str = "path_eval.lm") -> dict:
    """One fresh process importing `module` under `-X importtime`: whether that interpreter writes
    bytecode, per top-level package [source modules loaded, of them with a bytecode cache file]
    (`packages`), and per top-level package the self seconds of its modules (`self_s`)."""
    done = probe(env, "-X", "importtime", code=CACHE_PROBE.format(module=module))
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"self_s": self_seconds_by_package(done.stderr)}


def self_seconds_by_package(importtime: str) -> dict[str, float]:
    """`-X importtime`'s report summed by top-level package: each module's self time, in seconds."""
    totals: dict[str, float] = {}
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        fields = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(fields) != 3 or not fields[0].isdigit():  # a line some module printed that only looks alike
            continue
        top = fields[2].split(".")[0]
        totals[top] = totals.get(top, 0.0) + int(fields[0]) / 1e6
    return totals


def measure_series(label: str, repeats: int, env: dict) -> dict:
    first = import_seconds(env)  # apart: the file cache, and any bytecode an interpreter that may writes
    seconds = [round(import_seconds(env), 3) for _ in range(repeats)]
    report = import_report(env)
    by_package = report["self_s"]
    packages = {name: {"self_s": round(s, 3), "modules": report["packages"].get(name, [0, 0])[0],
                       "cached": report["packages"].get(name, [0, 0])[1]}
                for name, s in sorted(by_package.items(), key=lambda item: -item[1])}
    return {"label": label, "first_s": round(first, 3), "seconds": seconds,
            "median_s": round(statistics.median(seconds), 3),
            "importtime_total_s": round(sum(by_package.values()), 3),
            "dont_write_bytecode": report["dont_write_bytecode"],
            "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE"), "packages": packages}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON; an existing one gains this series")
    parser.add_argument("--label", required=True, help="names this series (e.g. as-installed, byte-compiled)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--note", default="", help="what was done to the machine before this series (e.g. compileall)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        raise PathEvalError(f"--repeats {args.repeats}: give 1 or more")
    return args


def earlier_series(path: Path) -> dict:
    """An --out that exists: this bench's own JSON, or one line saying it is not."""
    try:
        data = load(path)
    except (OSError, ValueError) as error:
        raise PathEvalError(f"{path} cannot be read as JSON ({error}): give a new path, or this bench's own file") from None
    if not (isinstance(data, dict) and isinstance(data.get("meta"), dict) and "machine" in data["meta"]
            and isinstance(data.get("series"), list)):
        raise PathEvalError(f"{path} is not a file this bench wrote (no meta.machine and series): give a new path")
    return data


def this_machine() -> str:
    import torch

    from benchmarks.end_to_end import machine

    return machine("cuda" if torch.cuda.is_available() else "cpu")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        here = this_machine()
        data = {"meta": {"machine": here, "python": sys.version.split()[0]}, "series": []}
        check_target(args.out)
        try:
            make_writable(args.out.parent)
        except OSError as error:
            raise PathEvalError(f"--out {args.out}: its folder cannot be written ({os_reason(error)}): "
                                "give a path in a writable folder") from None
        if args.out.exists():
            data = earlier_series(args.out)
            if data["meta"]["machine"] != here:
                raise PathEvalError(f"{args.out} holds series of {data['meta']['machine']}, not this {here}: "
                                    f"give another --out")
            if any(s["label"] == args.label for s in data["series"]):
                raise PathEvalError(f"{args.out} has a series labelled {args.label!r} already: give another --label")
        series = measure_series(args.label, args.repeats, dict(os.environ))
        series["command"] = shlex.join(["python", "-m", "benchmarks.import_cost", *argv])
        series["note"] = args.note
        data["series"].append(series)
        try:
            write_json_atomic(data, args.out)
        except OSError as error:
            raise PathEvalError(f"cannot write {args.out} ({os_reason(error)}): give a path in a writable folder") from None
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    top = ", ".join(f"{name} {p['self_s']:.2f} s ({p['cached']}/{p['modules']} cached)"
                    for name, p in list(series["packages"].items())[:6])
    print(f"{args.label}: median {series['median_s']:.2f} s of {series['seconds']}; by package (self): {top}")
    return 0


def render_import_cost(results: Path) -> str:
    """Each results/bench/import_cost_*.json: a series per label, then the packages' self seconds."""
    parts = []
    for path in sorted((results / "bench").glob("import_cost_*.json")):
        data = load(path)
        series = data["series"]
        parts.append(f"Source: {source(path, results)}. Machine: {data['meta']['machine']}, Python "
                     f"{data['meta']['python']}; " + "; ".join(f"{s['label']}: `{s['command']}`" for s in series) + ".")
        parts.append(table(["series", "first import s", "median s", "runs s", "bytecode written",
                            "-X importtime total s"],
                           [[s["label"], f"{s['first_s']:.2f}", f"{s['median_s']:.2f}",
                             ", ".join(f"{x:.2f}" for x in s["seconds"]), "no" if s["dont_write_bytecode"] else "yes",
                             f"{s['importtime_total_s']:.2f}"] for s in series]))
        first = series[0]["packages"]
        names = list(first)[:SHOWN_PACKAGES]
        rows = []
        for name in names:
            cells = []
            for s in series:
                p = s["packages"].get(name)
                cells.append("-" if p is None else f"{p['self_s']:.2f} ({p['cached']}/{p['modules']})")
            rows.append([f"`{name}`", *cells])
        parts.append(table(["package", *(f"{s['label']}: self s (modules with a bytecode cache / modules)"
                                         for s in series)], rows))
    return "\n\n".join(parts) or ("No record yet (`results/bench/import_cost_*.json`): `python -m "
                                   "benchmarks.import_cost --label NAME --out FILE`.")


if __name__ == "__main__":
    sys.exit(main())
