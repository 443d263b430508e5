"""The suite a stored run was made with: OUT/suite.json beside its results.json (written by the run),
so that a run of a copied, renamed suite is reported with its own labels and layout; for a run folder
without one, the built-in suite of that name. A stored run as a whole (records, suites, plan) is a
StoredRun, the unit a study's reports are made of."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec, available_suites, load_suite

if TYPE_CHECKING:
    from path_eval.plan import ResolvedPlan


def stored_suite(results: Path, name: str) -> SuiteSpec:
    """The suite `name` of the results at `results` (a run folder or its results.json)."""
    results = Path(results)
    stored = run_folder.suite_file(run_folder.folder_of(results))
    if stored.is_file():
        suite = run_folder.read_stored(SuiteSpec, stored, "suite")
        if suite.name == name:
            return suite
    if name in available_suites():
        return load_suite(name)
    raise PathEvalError(f"the results in {results} come from suite {name!r}, which has no suite.json beside them "
                        f"and is not built in: put the suite's JSON there as suite.json (or report with --layout)")


@dataclass
class StoredRun:
    """One run of a study: its folder (None for records given without one), its records, the suites
    they come from, and the plan it ran (None for a run folder without plan.json)."""

    folder: Path | None
    records: list[ResultRecord]
    suites: dict[str, SuiteSpec]
    plan: ResolvedPlan | None = None


def read_run(path: Path) -> StoredRun:
    """The run at `path` (a run folder or its results.json), with its stored suites and plan."""
    from path_eval.plan.stored import stored_plan
    from path_eval.results import load_records

    path = Path(path)
    records = load_records(path)
    folder = run_folder.folder_of(path)
    plan = stored_plan(folder)
    suites = {name: stored_suite(path, name) for name in dict.fromkeys(r.suite for r in records)}
    return StoredRun(folder, records, suites, plan)
