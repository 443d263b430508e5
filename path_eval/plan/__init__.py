"""The plan stage: everything a run can know before a model loads (resolve.py), with the model
references it resolves (models.py)."""
from path_eval.plan.resolve import PlannedItem, PlannedModel, ResolvedPlan, SkippedTask, resolve_plan

__all__ = ["PlannedItem", "PlannedModel", "ResolvedPlan", "SkippedTask", "resolve_plan"]
