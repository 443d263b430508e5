"""TheoremQA: lm-eval generates on our model over the local rows, scored by the original's rule
(path_eval/tasks/theoremqa.py)."""
from __future__ import annotations

from path_eval.evaluators.interface import EvaluationContext, FrozenSet, TaskResult
from path_eval.evaluators.lm_eval import evaluate_tasks
from path_eval.plan import PlannedItem
from path_eval.tasks.theoremqa import build_theoremqa_task


class TheoremQAEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        return []  # lm-eval reads the rows as they are

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        plan = context.plan
        tasks = [build_theoremqa_task(plan.spec(item), plan.data_dir, plan.suite.command_name) for item in items]
        return evaluate_tasks(lm, tasks, context)
