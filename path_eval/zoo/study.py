"""A compact copy of a run folder, small enough to commit: the zoo study's per-sample logs hold every
prompt (up to 16K tokens each, hundreds of MB in all), which the reports never read.

The copy keeps results.json, plan.json, suite.json, timings.json and the per-position curves; in
each per-sample log it replaces the prompt (`request`) and every long text of the sample (`doc`:
the input, the haystack) by its sha256 and length. The short fields stay (references, queries,
sample length, the response and its scores), so `report`, `compare`, the paired tests and `rescore`
read the copy as they read the run; a prompt is regenerated from its frozen key in suite.json and
plan.json when wanted. Corpus blocks keep their rows (sums per bucket); their per-position .npy
files, kept for resuming, are left out; lm-eval's own layout and the resume cache are left out.

    python -m path_eval.zoo.study RUN_FOLDER COPY_FOLDER
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.zoo import run_cli

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a finished run folder")
    parser.add_argument("copy", help="a new folder for the compact copy")
    args = parser.parse_args()
    print(f"{compact_run(Path(args.run), Path(args.copy))} per-sample rows -> {args.copy}")


if __name__ == "__main__":
    run_cli(main)
