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
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.markdown import load, source, table
from path_eval.atomic_files import write_json_atomic


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="zoo_study")
    parser.add_argument("--model", action="append", required=True, help="what eval.py run's --model takes (repeat)")
    parser.add_argument("--data-dir", type=Path, help="offline data folder (the zoo study's essays)")
    parser.add_argument("--label", required=True, help="this run's name in --out (before, after, ...)")
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def frozen_files(cache: Path) -> dict[str, str]:
    """sha256 of every frozen sample file under the cache, by its path there."""
    return {path.relative_to(cache).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((cache / "frozen").rglob("*.jsonl"))}


def freeze_sets(args: argparse.Namespace) -> list[dict]:
    """Each frozen set of the plan: its label, size in tokens and seconds to generate and write."""
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
    rows = []
    for model in plan.models:
        tokenizer = load_tokenizer(model.path)
        context = EvaluationContext(plan, model, Path(tempfile.mkdtemp()), tokenizer_sha256(tokenizer), 0, None)
        for kind in KINDS:
            items = plan.of_kind(kind, model.name)
            for frozen in evaluator_of(KINDS[kind]).frozen_sets(tokenizer, items, context) if items else []:
                began = time.perf_counter()
                frozen.freeze()
                rows.append({"set": frozen.label, "tokens": frozen.tokens,
                             "seconds": round(time.perf_counter() - began, 3)})
                print(f"{frozen.label}: {rows[-1]['seconds']} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    saved = os.environ.get("PATH_EVAL_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PATH_EVAL_CACHE"] = cache  # read when a set is frozen: a fresh cache, every set generated
        try:
            began = time.perf_counter()
            rows = freeze_sets(args)
            total = time.perf_counter() - began
            files = frozen_files(Path(cache))
        finally:
            if saved is None:
                del os.environ["PATH_EVAL_CACHE"]
            else:
                os.environ["PATH_EVAL_CACHE"] = saved
    from benchmarks.end_to_end import machine, versions
    from path_eval.results.provenance import git_revision

    run = {"label": args.label, "command": shlex.join(["python", "-m", "benchmarks.freezing", *sys.argv[1:]]),
           "revision": git_revision(), "machine": machine("cpu"), "versions": versions(),
           "sets": rows, "sets_s": round(sum(r["seconds"] for r in rows), 1), "wall_s": round(total, 1),
           "files_sha256": hashlib.sha256("".join(f"{k} {v}\n" for k, v in files.items()).encode()).hexdigest(),
           "files": len(files)}
    runs = [r for r in (load(args.out)["runs"] if args.out.is_file() else []) if r["label"] != args.label]
    write_json_atomic({"runs": runs + [run]}, args.out)
    print(f"{len(rows)} sets in {run['sets_s']} s ({run['wall_s']} s with the plan and tokenizers) -> {args.out}")


def task_of(label: str) -> str:
    return label.split("@", 1)[0]


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
    same = len({run["files_sha256"] for run in runs}) == 1
    lines = [f"Source: {source(path, results)}."]
    lines += [f"- {run['label']}: `{run['command']}` at {run['revision']}, {run['machine']}, python "
              f"{run['versions']['python']}, transformers {run['versions']['transformers']}" for run in runs]
    return "\n".join(lines) + "\n\n" + "\n\n".join([
        table(["task (its sets, seconds)", *(run["label"] for run in runs)], rows),
        f"The frozen files ({runs[0]['files']} sets): "
        + ("identical in every run (sha256 of the file list and hashes)." if same else "**they differ between runs**.")])


if __name__ == "__main__":
    main()
