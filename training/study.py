"""A compact copy of a run folder, small enough to commit: the zoo study's per-sample logs hold every
prompt (up to 16K tokens each, hundreds of MB in all), which the reports never read.

The copy keeps results.json, plan.json, suite.json, timings.json and the per-position curves; in
each per-sample log it replaces the prompt (`request`) and every long text of the sample (`doc`:
the input, the haystack) by its sha256 and length. The short fields stay (references, queries,
sample length, the response and its scores), so `report`, `compare`, the paired tests and `rescore`
read the copy as they read the run; a prompt is regenerated from its frozen key in suite.json and
plan.json when wanted. Corpus blocks keep their rows (sums per bucket); their per-position .npy
files, kept for resuming, are left out; lm-eval's own layout and the resume cache are left out.

`summary` reads a (compact) run's per-sample logs, item by item of its plan, into one cell per
model, task and length, for a run stopped before it wrote results.json: a generated task's metric averaged over its samples (and
seeds), its standard error; a corpus's perplexity overall and per position bucket; flip-flop's
error pooled over reads.

    python -m training.study RUN_FOLDER COPY_FOLDER
    python -m training.study --summary COPY_FOLDER --out SUMMARY.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
from pathlib import Path

from path_eval.errors import PathEvalError
from training import run_cli

KEPT_FILES = ("results.json", "plan.json", "suite.json", "timings.json")
LONG_TEXT = 256  # characters: longer strings of a sample are replaced by their hash


def digest(text: str) -> dict:
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}


def compact_value(value):
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return digest(value)
    if isinstance(value, dict):
        return {key: compact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [compact_value(item) for item in value]
    return value


def compact_row(row: dict) -> dict:
    """A per-sample log row without its prompt and long texts (see the module's docstring)."""
    compact = {key: value for key, value in row.items() if key != "request"}
    if "request" in row:
        compact["request"] = digest(json.dumps(row["request"], ensure_ascii=False))
    if "doc" in row:
        compact["doc"] = compact_value(row["doc"])
    return compact


def compact_run(run: Path, copy: Path) -> int:
    """Write the compact copy of `run` to `copy` (a new folder; of an unfinished run, whatever
    per-sample logs it has); returns the rows copied."""
    run, copy = Path(run), Path(copy)
    if not (run / "plan.json").is_file():
        raise PathEvalError(f"{run} holds no plan.json: give a run folder")
    if copy.exists():
        raise PathEvalError(f"{copy} exists: give a new folder for the copy")
    copy.mkdir(parents=True)
    for name in KEPT_FILES:
        if (run / name).is_file():
            shutil.copyfile(run / name, copy / name)
    if (run / "curves").is_dir():
        shutil.copytree(run / "curves", copy / "curves")
    rows = 0
    for log in sorted((run / "samples").glob("*/*.jsonl")):
        target = copy / "samples" / log.parent.name / log.name
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(log, encoding="utf-8") as source, open(target, "w", encoding="utf-8") as out:
            for line in source:
                out.write(json.dumps(compact_row(json.loads(line)), ensure_ascii=False) + "\n")
                rows += 1
    return rows


def summary(run: Path) -> list[dict]:
    """One cell per model, task and length of the run's plan whose per-sample logs are all there (see
    the module's docstring)."""
    from path_eval.plan import PlannedItem
    from path_eval.results.sample_logs import log_names, read_sample_log

    items = [PlannedItem.model_validate(item) for item in json.loads((Path(run) / "plan.json").read_text())["items"]]
    cells = []
    for item in items:
        for model in item.models:
            try:
                logs = [read_sample_log(run, model, name) for name in log_names(item)]
            except PathEvalError:  # a model the stopped run never reached
                continue
            cell = {"model": model, "task": item.task, "length": item.length}
            rows = [row for log in logs for row in log]
            if item.kind == "flipflop":
                wrong, reads = sum(r["wrong"] for r in rows), sum(r["reads"] for r in rows)
                cells.append(cell | {"metric": "flipflop_error", "value": wrong / reads, "n": len(rows),
                                     "reads": reads})
            elif item.kind == "corpus":
                buckets = [sum(r["nll_sum"][k] for r in rows) / sum(r["count"][k] for r in rows)
                           for k in range(len(rows[0]["count"]))]
                total = sum(sum(r["nll_sum"]) for r in rows) / sum(sum(r["count"]) for r in rows)
                cells.append(cell | {"metric": "perplexity", "value": math.exp(total), "n": len(rows),
                                     "by_position": [math.exp(b) for b in buckets]})
            else:
                metric = next(iter(rows[0]["scores"]))
                scores = [row["scores"][metric] for row in rows]
                mean = sum(scores) / len(scores)
                variance = sum((x - mean) ** 2 for x in scores) / max(1, len(scores) - 1)
                cells.append(cell | {"metric": metric, "value": mean, "n": len(scores), "seeds": len(logs),
                                     "stderr": math.sqrt(variance / len(scores))})
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="a run folder (of a finished run, or what a stopped one left)")
    parser.add_argument("copy", nargs="?", help="a new folder for the compact copy")
    parser.add_argument("--summary", help="a (compact) run folder to summarise from its per-sample logs")
    parser.add_argument("--out", help="--summary: the JSON file to write")
    args = parser.parse_args()
    if args.summary:
        if not args.out:
            parser.error("--summary needs --out")
        Path(args.out).write_text(json.dumps({"run": args.summary, "cells": summary(Path(args.summary))},
                                             indent=1) + "\n")
        return
    if not (args.run and args.copy):
        parser.error("give RUN_FOLDER and COPY_FOLDER (or --summary)")
    print(f"{compact_run(Path(args.run), Path(args.copy))} per-sample rows -> {args.copy}")


if __name__ == "__main__":
    run_cli(main)
