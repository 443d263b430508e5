"""Every record carries the schema_version of its format: written records have the current one,
files of version 1 (no field) still read, in results and baselines alike, and a newer version is
refused in one line naming the fix."""
import json
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.reports.check import load_baseline
from path_eval.results import load_records, write_results
from path_eval.results.schema import SCHEMA_VERSION
from tests.helpers import records

BASELINE = Path(__file__).resolve().parents[2] / "results" / "zoo" / "first_zoo" / "ci_baseline.json"


def test_written_records_carry_the_current_version(tmp_path):
    write_results(records(), tmp_path / "results.json")
    written = json.loads((tmp_path / "results.json").read_text())
    assert isinstance(written, list) and [r["schema_version"] for r in written] == [SCHEMA_VERSION] * 2


def test_version_1_files_still_read(tmp_path):
    old = [{k: v for k, v in r.model_dump(mode="json").items() if k != "schema_version"} for r in records()]
    for r in old:
        del r["provenance"]["model_source"], r["provenance"]["model_revision"]
    (tmp_path / "results.json").write_text(json.dumps(old))
    assert [r.value for r in load_records(tmp_path)] == [0.55, 18.0]
    baseline, _ = load_baseline(BASELINE)  # the first zoo's committed ci baseline predates the field
    assert "schema_version" not in json.loads(BASELINE.read_text())["records"][0] and len(baseline) == 108


def test_a_newer_version_is_refused_in_one_line(tmp_path, capsys):
    newer = [r.model_dump(mode="json") | {"schema_version": SCHEMA_VERSION + 1} for r in records()]
    (tmp_path / "results.json").write_text(json.dumps(newer))
    with pytest.raises(PathEvalError, match=f"schema_version {SCHEMA_VERSION + 1}, newer than this path-eval "
                                            f"reads \\({SCHEMA_VERSION}\\): upgrade path-eval"):
        load_records(tmp_path)
    (tmp_path / "baseline.json").write_text(json.dumps({"records": newer}))
    assert main(["check", str(tmp_path), "--baseline", str(tmp_path / "baseline.json")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "upgrade path-eval" in line
