"""A run's per-sample logs read back (OUT/samples/<model>/<name>.jsonl, one JSON line per sample, as
the evaluators write them through `path_eval.samples`): by rescore and by the reports' paired tests."""
from __future__ import annotations

import json
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.plan import PlannedItem
from path_eval.samples import slug


def log_names(item: PlannedItem) -> list[str]:
    """The names of an item's logs: TASK@LENGTH for a corpus or flip-flop task; else one per lm-eval
    task (seed), the lm-eval task name of a generated task or a task at a length, the suite task's
    name for a task without lengths (as the lm-eval evaluator writes them)."""
    if item.kind in ("corpus", "flipflop"):
        return [f"{item.task}@{item.length}"]
    return list(item.lm_eval_tasks) if item.kind == "generated" or item.length is not None else [item.task]


def read_sample_log(run: Path, model: str, name: str) -> list[dict]:
    """The rows of log `name` of `model` in run folder `run`, or one error line."""
    file = Path(run) / "samples" / slug(model) / f"{name}.jsonl"
    if not file.is_file():
        raise PathEvalError(f"no per-sample log {file}: give the run folder with the samples/ folder the run wrote "
                            "beside its results.json")
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
