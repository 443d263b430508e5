"""TheoremQA: lm-eval generates on our model over the local rows, scored by the original's rule
(path_eval/tasks/theoremqa.py)."""
from __future__ import annotations

from path_eval.evaluators.lm_eval import LmEvalEvaluator
from path_eval.plan import PlannedItem
from path_eval.tasks.lm_eval_tasks import LmEvalTask
from path_eval.tasks.theoremqa import build_theoremqa_task


class TheoremQAEvaluator(LmEvalEvaluator):
    def task(self, lm, item: PlannedItem, plan) -> LmEvalTask:
        return build_theoremqa_task(plan.spec(item), plan.data_dir, plan.suite.command_name)
