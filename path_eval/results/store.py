"""Reading and writing result files; every write goes through `path_eval.atomic_files`."""
from __future__ import annotations

import json
import lzma
from pathlib import Path

from pydantic import ValidationError

from path_eval import run_folder
from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError
from path_eval.results.schema import SCHEMA_VERSION, ResultRecord, RunResults


def write_results(records: list[ResultRecord], target: Path) -> None:
    validated = RunResults(records)
    write_json_atomic(json.loads(validated.model_dump_json()), target)


def parse_json_file(path: Path):
    """A JSON file's value, xz-decompressed first where its name ends in .xz (compact copies and
    committed records keep large JSON that way). Raises lzma.LZMAError, UnicodeDecodeError,
    json.JSONDecodeError or RecursionError for the caller to word."""
    data = Path(path).read_bytes()
    return json.loads((lzma.decompress(data) if str(path).endswith(".xz") else data).decode("utf-8"))


def load_records(path: Path) -> list[ResultRecord]:
    """The validated records of one run (its folder or its results.json). `path_eval.load_results`
    opens runs as a `Results` study instead, for reports and the Python API."""
    path = run_folder.results_of(path)
    if not path.is_file():
        raise PathEvalError(f"no results file at {path}: give a results.json or the run folder holding it")
    give = "give a results.json that `python eval.py run` wrote"
    try:
        raw = parse_json_file(path)
    except lzma.LZMAError as err:
        raise PathEvalError(f"{path} is not a path-eval results file: not an xz archive ({err}): {give}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PathEvalError(f"{path} is not a path-eval results file: not JSON ({err}): {give}") from None
    except RecursionError:
        raise PathEvalError(f"{path} is not a path-eval results file: it nests deeper than Python reads: {give}") \
            from None
    check_schema_version(raw, path)
    try:
        records = RunResults.model_validate(raw).root
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{path} is not a path-eval results file: "
                            f"{'.'.join(map(str, first['loc'])) or 'file'}: {first['msg']}: {give}") from None
    refuse_duplicates(records, path)
    return records


def record_identity(record: ResultRecord) -> tuple:
    """What one number of a run is of: two records with one identity would make every reader pick one."""
    return (record.suite, record.model, record.task, record.length, tuple(record.bucket or ()), record.length_bucket,
            record.metric, record.data_source)


def refuse_duplicates(records: list[ResultRecord], source: Path) -> None:
    """One line naming the first record that `source` holds twice (a run writes each once; two would let
    a check or a table pick either)."""
    seen = set()
    for record in records:
        identity = record_identity(record)
        if identity in seen:
            where = f"{record.task}{'' if record.length is None else '@' + str(record.length)}"
            raise PathEvalError(f"{source} holds two records of {record.model} {where} {record.metric} (suite "
                                f"{record.suite}): keep one, or give the results.json a run wrote")
        seen.add(identity)


def check_schema_version(records, source: Path) -> None:
    """Records of a newer format than this path-eval reads are refused in one line naming the fix
    (validation would only name a field it does not know), as is a version that is not a whole number
    (`"99"` must not read as the current one). Older records read as they are."""
    versions = [r.get("schema_version") for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    malformed = [v for v in versions if v is not None and (isinstance(v, bool) or not isinstance(v, int))]
    if malformed:
        raise PathEvalError(f"{source} holds a record of schema_version {malformed[0]!r}, not a whole number: give "
                            f"records as path-eval writes them (schema_version 1 to {SCHEMA_VERSION})")
    newer = [v for v in versions if v is not None and v > SCHEMA_VERSION]
    if newer:
        raise PathEvalError(f"{source} holds records of schema_version {max(newer)}, newer than this path-eval reads "
                            f"({SCHEMA_VERSION}): upgrade path-eval to read them")
