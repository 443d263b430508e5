"""Reading and writing result files; every write goes through a temporary file and a rename."""
from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from path_eval.errors import PathEvalError
from path_eval.results.schema import ResultRecord, RunResults


def write_atomic(data: str | bytes, target: Path) -> None:
    """`target` holds `data` (text as UTF-8) whole or not at all."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial")
    try:
        if isinstance(data, str):
            staging.write_text(data, encoding="utf-8")
        else:
            staging.write_bytes(data)
        os.replace(staging, target)
    except BaseException:  # a full disk or an interrupt: no half-written file stays behind
        staging.unlink(missing_ok=True)
        raise


def write_json_atomic(data, target: Path) -> None:
    write_atomic(json.dumps(data, indent=1, ensure_ascii=False) + "\n", target)


def write_results(records: list[ResultRecord], target: Path) -> None:
    validated = RunResults(records)
    write_json_atomic(json.loads(validated.model_dump_json()), target)


def load_results(path: Path) -> list[ResultRecord]:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise PathEvalError(f"no results file at {path}: give a results.json or the run folder holding it")
    try:
        return RunResults.model_validate_json(path.read_text()).root
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{path} is not a path-eval results file: "
                            f"{'.'.join(map(str, first['loc'])) or 'file'}: {first['msg']}: give a results.json that "
                            "`python eval.py run` wrote") from None
