"""Code benchmarks (HumanEval, MBPP, MBPP+): lm-eval generates on our model from the benchmark's own
task config, and each program runs in the sandbox (path_eval/tasks/code.py)."""
from __future__ import annotations

from path_eval.errors import PathEvalError
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, TaskResult
from path_eval.evaluators.lm_eval import evaluate_tasks
from path_eval.plan import PlannedItem
from path_eval.plan.resolve import CODE_EXECUTION_OFF
from path_eval.tasks.code import ProgramShare, build_code_task


class CodeEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        return []  # lm-eval reads the rows as they are

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        plan = context.plan
        if not plan.allow_code_execution:  # the plan skips these items without the flag; never run them
            raise PathEvalError(f"a code task {CODE_EXECUTION_OFF}")
        share = ProgramShare(lm.process_index, lm.process_count, lm.gather_object)  # each program runs once
        tasks = [build_code_task(plan.spec(item), plan.data_dir, plan.suite.command_name, share) for item in items]
        return evaluate_tasks(lm, tasks, context)
