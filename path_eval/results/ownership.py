"""Whose a run folder is: `run` and `rescore` claim their output folder here, holding it
(`path_eval.run_folder.locked`), before they write in it, so that nothing another run or another
tool left there is replaced. A folder of the same plan is the same run: resumed, or made again."""
from __future__ import annotations

from pathlib import Path

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.plan import ResolvedPlan
from path_eval.plan.stored import describe, same_plan, stored_plan
from path_eval.results.store import load_records


def claim_for_run(out: Path, plan: ResolvedPlan) -> None:
    """One line where `out` holds what the run of `plan` must not replace: files no run makes, another
    plan's run, a results.json without the plan a run writes first (another tool's, a rescore's)."""
    stored = _stored_plan_of_run_folder(out)
    if stored is not None and not same_plan(stored, plan):
        raise PathEvalError(f"--out {out} holds another run ({describe(stored)}), not this one ({describe(plan)}): "
                            f"give a new --out, or remove {out}")
    if stored is None and run_folder.results_file(out).exists():
        raise PathEvalError(f"--out {out} holds a results.json without the plan.json a run writes first (another "
                            "tool's, or a rescore's): give a new --out, or remove it")


def claim_for_rescore(out: Path, run: Path) -> None:
    """One line where `out`, rescore's output folder for the records of `run`, holds what they must not
    replace: files no run makes, another run (its plan.json), a results.json path-eval did not write.
    The run itself, and a folder of a rescore's records (path-eval's, without a plan), are its own."""
    if Path(out).resolve() == Path(run).resolve():
        return
    if _stored_plan_of_run_folder(out) is not None:
        raise PathEvalError(f"--out {out} is the folder of another run (it holds plan.json), whose results.json "
                            f"rescore would replace with {run}'s: give a new folder, or {run} itself")
    results = run_folder.results_file(out)
    if results.exists() and not _written_by_path_eval(results):
        raise PathEvalError(f"--out {out} holds a results.json that path-eval did not write: give a new folder, "
                            f"or {run} itself")


def _stored_plan_of_run_folder(out: Path) -> ResolvedPlan | None:
    run_folder.refuse_foreign(out)
    return stored_plan(out)


def _written_by_path_eval(results: Path) -> bool:
    try:
        load_records(results)
    except PathEvalError:
        return False
    return True
