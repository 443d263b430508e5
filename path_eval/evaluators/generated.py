"""Generated tasks (RULER, PhoneBook): samples made with the model's tokenizer and frozen per (task,
length, seed, tokenizer, generator version), then evaluated as lm-eval tasks."""
from __future__ import annotations

from path_eval.evaluators import EvaluationContext, TaskResult
from path_eval.evaluators.lm_eval import evaluate_tasks
from path_eval.plan import PlannedItem
from path_eval.tasks.generated import build_generated_task


class GeneratedEvaluator:
    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        # Under data parallelism the first process freezes any new samples; the others wait, then read them.
        if lm.rank != 0:
            lm.barrier()
        plan = context.plan
        tasks = [build_generated_task(plan.spec(item), item.length, seed, lm.tokenizer, context.tokenizer_sha256,
                                      item.samples, plan.data_dir, plan.suite.name)
                 for item in items for seed in item.seeds]
        if lm.rank == 0:
            lm.barrier()
        return evaluate_tasks(lm, tasks, context)
