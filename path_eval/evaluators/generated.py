"""Generated tasks (RULER, PhoneBook): samples made with the model's tokenizer and frozen per (task,
length, seed, tokenizer, generator version), then evaluated as lm-eval tasks."""
from __future__ import annotations

from functools import partial

from path_eval.evaluators.interface import EvaluationContext, FrozenSet, TaskResult
from path_eval.evaluators.lm_eval import evaluate_tasks
from path_eval.plan import PlannedItem
from path_eval.tasks.generated import build_generated_task


class GeneratedEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        """One set per (task, length, seed): what `run` reads back (checked against its hash)."""
        return [FrozenSet.of_item(item, seed, partial(self._task, tokenizer, item, seed, context))
                for item in items for seed in item.seeds]

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        tasks = [self._task(lm.tokenizer, item, seed, context) for item in items for seed in item.seeds]
        return evaluate_tasks(lm, tasks, context)

    @staticmethod
    def _task(tokenizer, item: PlannedItem, seed: int, context: EvaluationContext):
        plan = context.plan
        return build_generated_task(plan.spec(item), item.length, seed, tokenizer, context.tokenizer_sha256,
                                    item.samples, plan.data_dir, plan.suite.command_name, chat=context.chat)
