"""A run's per-sample logs read back (OUT/samples/<model>/<name>.jsonl, one JSON line per sample, as
the evaluators write them through `path_eval.samples`): by rescore and by the reports' paired tests.
A committed compact copy of a run (training/study.py) holds them gzip-compressed, <name>.jsonl.gz,
read the same way."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
from path_eval.plan import PlannedItem


def log_names(item: PlannedItem) -> list[str]:
    """The names of an item's logs, as its kind's row in path_eval/kinds/ names them: TASK@LENGTH
    for a corpus or flip-flop task; else one per lm-eval task (seed)."""
    return KINDS[item.kind].log_names(item)


def read_sample_log(run: Path, model: str, name: str) -> list[dict]:
    """The rows of log `name` of `model` in run folder `run`, or one error line. Lines end at "\\n" only:
    a sample's text may hold the characters `str.splitlines` also breaks at (U+2028, U+0085, ...), which
    JSON writes as they are."""
    file = sample_log_file(run, model, name)
    if not file.is_file():
        raise PathEvalError(f"no per-sample log {file}: give the run folder with the samples/ folder the run wrote "
                            "beside its results.json")
    try:
        data = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
        rows = [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()]
    except (ValueError, RecursionError, EOFError, OSError) as err:  # not gzip, UTF-8 or JSON, or nested too deep
        raise PathEvalError(f"per-sample log {file} is not JSON lines ({str(err).split(':')[0]}): give the "
                            "samples/ folder the run wrote, or run it again") from None
    not_sample = next((row for row in rows if not isinstance(row, dict)), None)
    if not rows or not_sample is not None:
        problem = "holds no samples" if not rows else \
            f"holds a JSON {type(not_sample).__name__} where a sample (an object) belongs"
        raise PathEvalError(f"per-sample log {file} {problem}: give the samples/ folder the run wrote, or run it "
                            "again")
    return rows


def sample_log_file(run: Path, model: str, name: str) -> Path:
    """The log as the run wrote it, else its compressed form where only that exists."""
    file = run_folder.sample_log(run, model, name)
    compressed = file.with_name(file.name + ".gz")
    return compressed if not file.is_file() and compressed.is_file() else file
