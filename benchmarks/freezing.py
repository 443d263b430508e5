"""What freezing a suite's generated samples costs, set by set, in one process on one core.

    python -m benchmarks.freezing --suite zoo_study --model zoo:path --data-dir DATA \
        --label after --out results/bench/freezing_cpu.json

Every sample set the run would freeze for the models (`eval.py run`'s samples phase: RULER,
PhoneBook, flip-flop, the tagging tasks) is generated into a fresh PATH_EVAL_CACHE, one after
another in this process, without the worker pool a run spreads large sets over: the time of each
set is its generator's own, comparable between revisions and machines. The sets' files are hashed
too, so two runs of the bench (say before and after a change to a generator's speed) show whether
they froze the same samples. A run is added to --out under its --label (an existing label is
replaced); the JSON keeps each run's command, revision, machine and versions.

With --processes N the bench times what a study's processes meet instead: N processes at once, each
freezing every set of the plan into one fresh cache the way `eval.py run`'s samples phase does
(`runner.processes.freeze_on_cores` with the cores a run uses, worker pool and set locks included),
as the parts of `training/gpu_study.sh` do side by side. It records each process's seconds, the
group's wall time and the files' hash, under --label in --out (a file of such groups).

    python -m benchmarks.freezing --suite zoo_study --model zoo:path --data-dir DATA --processes 2 \
        --label after --out results/bench/freezing_processes_cpu.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.markdown import load, source, table
from path_eval.atomic_files import write_json_atomic

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="zoo_study")
    parser.add_argument("--model", action="append", required=True, help="what eval.py run's --model takes (repeat)")
    parser.add_argument("--data-dir", type=Path, help="offline data folder (the zoo study's essays)")
    parser.add_argument("--label", required=True, help="this run's name in --out (before, after, ...)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--processes", type=int, default=1,
                        help="N > 1: N processes at once freezing the plan's sets as a run does, into one cache")
    parser.add_argument("--group-member", action="store_true", help=argparse.SUPPRESS)  # one of --processes' N
    return parser.parse_args(argv)


def frozen_files(cache: Path) -> dict[str, str]:
    """sha256 of every frozen sample file under the cache, by its path there."""
    return {path.relative_to(cache).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((cache / "frozen").rglob("*.jsonl"))}


def plan_sets(args: argparse.Namespace):
    """Every frozen set the run of the plan would freeze, model by model."""
    from path_eval.data import default_data_dir
    from path_eval.evaluators import EvaluationContext
    from path_eval.evaluators.registry import evaluator_of
    from path_eval.kinds import KINDS
    from path_eval.models.identity import tokenizer_sha256
    from path_eval.models.tokenizer import load_tokenizer
    from path_eval.plan import ChatOptions, resolve_plan
    from path_eval.plan.models import resolve_models
    from path_eval.suites import load_suite

    resolve_models(args.model)
    plan = resolve_plan(load_suite(args.suite), args.model, tasks=None, lengths=None, limit=None, seed=1234,
                        data_dir=args.data_dir or default_data_dir(), max_length=None,
                        chat=ChatOptions.from_arguments(False, None, False), allow_code_execution=False)
    for model in plan.models:
        tokenizer = load_tokenizer(model.path)
        context = EvaluationContext(plan, model, Path(tempfile.mkdtemp()), tokenizer_sha256(tokenizer), 0, None)
        for kind in KINDS:
            items = plan.of_kind(kind, model.name)
            yield from evaluator_of(KINDS[kind]).frozen_sets(tokenizer, items, context) if items else []


def freeze_sets(args: argparse.Namespace) -> list[dict]:
    """Each frozen set of the plan: its label, size in tokens and seconds to generate and write."""
    rows = []
    for frozen in plan_sets(args):
        began = time.perf_counter()
        frozen.freeze()
        rows.append({"set": frozen.label, "tokens": frozen.tokens, "seconds": round(time.perf_counter() - began, 3)})
        print(f"{frozen.label}: {rows[-1]['seconds']} s", flush=True)
    return rows


def freeze_as_a_run(args: argparse.Namespace) -> None:
    """One process of a --processes group: the plan's sets frozen as the run's samples phase freezes
    them; prints its seconds (the plan and tokenizers apart) as a JSON line."""
    from path_eval.cpu_threads import usable_cores
    from path_eval.runner.processes import freeze_on_cores

    sets = list(plan_sets(args))
    began = time.perf_counter()
    freeze_on_cores(sets, cores=usable_cores())
    print(json.dumps({"sets": len(sets), "seconds": round(time.perf_counter() - began, 1)}), flush=True)


def freeze_in_a_group(args: argparse.Namespace, cache: Path, argv: list[str]) -> dict:
    """--processes N: N members started at once on one fresh cache; each member's line and the wall
    time from the first start to the last exit."""
    command = [sys.executable, "-m", "benchmarks.freezing", *argv, "--group-member"]
    began = time.perf_counter()
    members = [subprocess.Popen(command, env=os.environ | {"PATH_EVAL_CACHE": str(cache)}, cwd=ROOT,
                                stdout=subprocess.PIPE, text=True) for _ in range(args.processes)]
    outputs = [member.communicate()[0] for member in members]
    wall = time.perf_counter() - began
    if any(member.returncode for member in members):
        raise SystemExit(f"a group member failed (exit codes {[m.returncode for m in members]})")
    lines = [json.loads(output.strip().splitlines()[-1]) for output in outputs]
    return {"processes": args.processes, "sets": lines[0]["sets"], "process_s": [line["seconds"] for line in lines],
            "wall_s": round(wall, 1)}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.group_member:
        freeze_as_a_run(args)
        return
    saved = os.environ.get("PATH_EVAL_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PATH_EVAL_CACHE"] = cache  # read when a set is frozen: a fresh cache, every set generated
        try:
            if args.processes > 1:
                measured = freeze_in_a_group(args, Path(cache), argv)
            else:
                began = time.perf_counter()
                rows = freeze_sets(args)
                measured = {"sets": rows, "sets_s": round(sum(r["seconds"] for r in rows), 1),
                            "wall_s": round(time.perf_counter() - began, 1)}
            files = frozen_files(Path(cache))
        finally:
            if saved is None:
                del os.environ["PATH_EVAL_CACHE"]
            else:
                os.environ["PATH_EVAL_CACHE"] = saved
    from benchmarks.end_to_end import machine, versions
    from path_eval.results.provenance import git_revision

    run = {"label": args.label, "command": shlex.join(["python", "-m", "benchmarks.freezing", *argv]),
           "revision": git_revision(), "machine": machine("cpu"), "versions": versions(), **measured,
           "files_sha256": hashlib.sha256("".join(f"{k} {v}\n" for k, v in files.items()).encode()).hexdigest(),
           "files": len(files)}
    runs = [r for r in (load(args.out)["runs"] if args.out.is_file() else []) if r["label"] != args.label]
    write_json_atomic({"runs": runs + [run]}, args.out)
    if args.processes > 1:
        print(f"{args.processes} processes, {run['sets']} sets each: {run['wall_s']} s (each process "
              f"{', '.join(map(str, run['process_s']))} s) -> {args.out}")
    else:
        print(f"{len(rows)} sets in {run['sets_s']} s ({run['wall_s']} s with the plan and tokenizers) -> {args.out}")


def task_of(label: str) -> str:
    return label.split("@", 1)[0]


def files_verdict(runs: list[dict], noun: str) -> str:
    """Whether the runs froze the same samples (the hash of every file's hash)."""
    same = len({run["files_sha256"] for run in runs}) == 1
    verdict = f"identical in every {noun} (sha256 of the file list and hashes)." if same else \
        f"**they differ between {noun}s**."
    return f"The frozen files ({runs[0]['files']} sets): {verdict}"


def render_freezing(results: Path) -> str:
    """The freezing bench's runs side by side: seconds per task (its sets summed) and in all, and
    whether the runs froze the same samples."""
    path = results / "bench" / "freezing_cpu.json"
    runs = load(path)["runs"]
    per_task = []
    for run in runs:
        seconds = defaultdict(float)
        for row in run["sets"]:
            seconds[task_of(row["set"])] += row["seconds"]
        per_task.append(seconds)
    tasks = sorted(set().union(*per_task), key=lambda t: -per_task[0].get(t, 0.0))
    rows = [[task, *(f"{seconds.get(task, 0.0):.1f}" for seconds in per_task)] for task in tasks]
    rows.append(["all sets", *(f"**{run['sets_s']:.1f}**" for run in runs)])
    lines = [f"Source: {source(path, results)}."]
    lines += [f"- {run['label']}: `{run['command']}` at {run['revision']}, {run['machine']}, python "
              f"{run['versions']['python']}, transformers {run['versions']['transformers']}" for run in runs]
    return "\n".join(lines) + "\n\n" + "\n\n".join([
        table(["task (its sets, seconds)", *(run["label"] for run in runs)], rows), files_verdict(runs, "run")])


def render_freezing_processes(results: Path) -> str:
    """The --processes groups side by side: each process's seconds and the group's wall time, and
    whether the groups froze the same samples."""
    path = results / "bench" / "freezing_processes_cpu.json"
    runs = load(path)["runs"]
    lines = [f"Source: {source(path, results)}."]
    lines += [f"- {run['label']}: `{run['command']}` at {run['revision']}, {run['machine']}" for run in runs]
    rows = [[run["label"], str(run["processes"]), str(run["sets"]), ", ".join(f"{s:.1f}" for s in run["process_s"]),
             f"**{run['wall_s']:.1f}**"] for run in runs]
    return "\n".join(lines) + "\n\n" + "\n\n".join([
        table(["run", "processes", "sets each", "each process (s)", "wall (s)"], rows), files_verdict(runs, "group")])


if __name__ == "__main__":
    main()
