"""The suite a stored run was made with: OUT/suite.json beside its results.json (written by the run),
so that a run of a copied, renamed suite is reported with its own labels and layout; for a run folder
without one, the built-in suite of that name."""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from path_eval.errors import PathEvalError
from path_eval.suites import SuiteSpec, available_suites, load_suite


def stored_suite(results: Path, name: str) -> SuiteSpec:
    """The suite `name` of the results at `results` (a run folder or its results.json)."""
    results = Path(results)
    stored = (results if results.is_dir() else results.parent) / "suite.json"
    if stored.is_file():
        try:
            suite = SuiteSpec.model_validate_json(stored.read_text())
        except ValidationError as err:
            first = err.errors()[0]
            raise PathEvalError(f"{stored} is not a path-eval suite: {'.'.join(map(str, first['loc']))}: "
                                f"{first['msg']}") from None
        if suite.name == name:
            return suite
    if name in available_suites():
        return load_suite(name)
    raise PathEvalError(f"the results in {results} come from suite {name!r}, which has no suite.json beside them "
                        f"and is not built in: put the suite's JSON there as suite.json (or report with --layout)")
