"""The plan stage: everything a run can know before a model loads (resolve.py), with the model
references it resolves (models.py)."""
from path_eval.plan.resolve import ChatOptions, PlannedItem, PlannedModel, ResolvedPlan, SkippedTask, resolve_plan

__all__ = ["ChatOptions", "PlannedItem", "PlannedModel", "ResolvedPlan", "SkippedTask", "resolve_plan"]
