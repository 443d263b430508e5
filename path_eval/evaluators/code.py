"""Code benchmarks (HumanEval, MBPP, MBPP+): lm-eval generates on our model from the benchmark's own
task config, and each program runs in the sandbox (path_eval/tasks/code.py)."""
from __future__ import annotations

from path_eval.errors import PathEvalError
from path_eval.evaluators.interface import EvaluationContext, TaskResult
from path_eval.evaluators.lm_eval import LmEvalEvaluator
from path_eval.plan import PlannedItem
from path_eval.plan.resolve import CODE_EXECUTION_OFF
from path_eval.tasks.code import ProgramShare, build_code_task
from path_eval.tasks.lm_eval_tasks import LmEvalTask


class CodeEvaluator(LmEvalEvaluator):
    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        if not context.plan.allow_code_execution:  # the plan skips these items without the flag; never run them
            raise PathEvalError(f"a code task {CODE_EXECUTION_OFF}")
        return super().run(lm, items, context)

    def task(self, lm, item: PlannedItem, plan) -> LmEvalTask:
        share = ProgramShare(lm.process_index, lm.process_count, lm.gather_object)  # each program runs once
        return build_code_task(plan.spec(item), plan.data_dir, plan.suite.command_name, share)
