"""Reading and writing result files; every write goes through `path_eval.atomic_files`."""
from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError
from path_eval.results.schema import SCHEMA_VERSION, ResultRecord, RunResults


def read_stored(model, file: Path, what: str, fix: str = ""):
    """The pydantic `model` stored as JSON in `file` (a run's plan.json or suite.json), or one line
    naming the first problem."""
    try:
        return model.model_validate_json(file.read_text())
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{file} is not a path-eval {what}: {'.'.join(map(str, first['loc']))}: "
                            f"{first['msg']}{fix}") from None


def write_results(records: list[ResultRecord], target: Path) -> None:
    validated = RunResults(records)
    write_json_atomic(json.loads(validated.model_dump_json()), target)


def load_records(path: Path) -> list[ResultRecord]:
    """The validated records of one run (its folder or its results.json). `path_eval.load_results`
    opens runs as a `Results` study instead, for reports and the Python API."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise PathEvalError(f"no results file at {path}: give a results.json or the run folder holding it")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PathEvalError(f"{path} is not a path-eval results file: not JSON ({err}): give a results.json that "
                            "`python eval.py run` wrote") from None
    check_schema_version(raw, path)
    try:
        return RunResults.model_validate(raw).root
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{path} is not a path-eval results file: "
                            f"{'.'.join(map(str, first['loc'])) or 'file'}: {first['msg']}: give a results.json that "
                            "`python eval.py run` wrote") from None


def check_schema_version(records, source: Path) -> None:
    """Records of a newer format than this path-eval reads are refused in one line naming the fix
    (validation would only name a field it does not know). Older records read as they are."""
    versions = [r.get("schema_version") for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    newer = [v for v in versions if isinstance(v, int) and v > SCHEMA_VERSION]
    if newer:
        raise PathEvalError(f"{source} holds records of schema_version {max(newer)}, newer than this path-eval reads "
                            f"({SCHEMA_VERSION}): upgrade path-eval to read them")
