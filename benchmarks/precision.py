"""How far one precision moves scores from another: two runs of the same command but `--dtype`
(e.g. bfloat16 against autocast-bf16), compared record by record and generation by generation.

    python -m benchmarks.precision RUN_A RUN_B [RUN_A2 RUN_B2 ...] --out results/precision/NAME.json \
        --command "..." --command "..."

Writes {meta, pairs}: per pair of runs, per (model, task, length, length bucket, metric) both values
and B - A (x100 where the registry shows the metric as a percentage), and per logged task and
length how many generations differ between the two runs, of how many."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from path_eval.metrics.registry import shown_as_percent
from path_eval.results import load_records
from path_eval.atomic_files import write_json_atomic


def unit(metric: str) -> float:
    return 100.0 if shown_as_percent(metric) else 1.0


def compare_runs(a: Path, b: Path) -> dict:
    records_a = {(r.model, r.task, r.length, r.length_bucket, r.metric): r for r in load_records(a) if r.bucket is None}
    records_b = {(r.model, r.task, r.length, r.length_bucket, r.metric): r for r in load_records(b) if r.bucket is None}
    cells = []
    for key, first in records_a.items():
        second = records_b.get(key)
        if second is None:
            continue
        scale = unit(first.metric)
        cells.append({"model": key[0], "task": key[1], "length": key[2], "length_bucket": key[3], "metric": key[4],
                      "n": first.n, "a": round(scale * first.value, 4), "b": round(scale * second.value, 4),
                      "b_minus_a": round(scale * (second.value - first.value), 4)})
    generations = []
    for log_a in sorted((a / "samples").glob("*/*.jsonl")):
        log_b = b / "samples" / log_a.parent.name / log_a.name
        if not log_b.is_file():
            continue
        rows_a = [json.loads(line) for line in log_a.read_text().splitlines()]
        rows_b = {row["doc_id"]: row for row in map(json.loads, log_b.read_text().splitlines())}
        differ = sum(row["response"] != rows_b[row["doc_id"]]["response"] for row in rows_a)
        generations.append({"model": log_a.parent.name, "log": log_a.stem, "samples": len(rows_a), "differ": differ})
    return {"cells": cells, "generations": generations}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders in pairs: A B [A B ...]")
    parser.add_argument("--out", required=True)
    parser.add_argument("--command", action="append", default=[], help="the commands that made the runs")
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    if len(args.runs) % 2:
        parser.error("give the run folders in pairs: A B [A B ...]")
    pairs = []
    for a, b in zip(args.runs[::2], args.runs[1::2]):
        first, second = (load_records(Path(run))[0].provenance for run in (a, b))
        pairs.append({"a": {"run": a, "dtype": first.dtype, "wall_time_s": first.wall_time_s},
                      "b": {"run": b, "dtype": second.dtype, "wall_time_s": second.wall_time_s}}
                     | compare_runs(Path(a), Path(b)))
    write_json_atomic({"meta": {"commands": args.command, "note": args.note}, "pairs": pairs}, Path(args.out))
    print(json.dumps(pairs, indent=1))


if __name__ == "__main__":
    main()
