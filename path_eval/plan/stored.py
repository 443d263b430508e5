"""The plan a run folder keeps (OUT/plan.json), read in one place, and what makes two runs one: the
same plan (`path_eval.results.ownership` claims an output folder by it)."""
from __future__ import annotations

from pathlib import Path

from path_eval import run_folder
from path_eval.plan.resolve import ResolvedPlan


def stored_plan(folder: Path) -> ResolvedPlan | None:
    """The plan the run folder `folder` keeps, with its resolved suite; None where it keeps none (a
    results.json given on its own); one line where its plan.json is not a path-eval plan."""
    file = run_folder.plan_file(folder)
    if not file.is_file():
        return None
    return run_folder.read_stored(ResolvedPlan, file, "plan", ": give the folder a run wrote, or remove the file")


def same_plan(first: ResolvedPlan, second: ResolvedPlan) -> bool:
    """Whether two plans are one run's: the same suite, models, items, limit, seed and data, as their
    JSON (what plan.json holds) says."""
    return first.model_dump(mode="json") == second.model_dump(mode="json")


def describe(plan: ResolvedPlan) -> str:
    """A run in a few words, enough to tell two apart: its suite, models, items, limit and seed."""
    models = ", ".join(model.name for model in plan.models) or "no model"
    limit = f", limit {plan.limit}" if plan.limit is not None else ""
    items = f"{len(plan.items)} item{'' if len(plan.items) == 1 else 's'}"
    return f"suite {plan.suite.name}, {models}, {items}{limit}, seed {plan.seed}"
