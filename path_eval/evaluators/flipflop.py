"""Flip-flop tasks: frozen FFL(p_ignore) sequences (path_eval/tasks/flipflop.py), one teacher-forced
forward per sequence, the argmax at every position, and the registry's `flipflop_error` over all
read positions of a seed's sequences (the paper's definition; lm-eval loglikelihood requests per
read would give the same numbers at one forward per read)."""
from __future__ import annotations

from functools import partial

from path_eval.atomic_files import write_jsonl_atomic
from path_eval.data import fingerprint
from path_eval.evaluators.argmax import argmax_predictions
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, LmEvalOutput, TaskResult, native_output
from path_eval.kinds import length_log_name
from path_eval.metrics.flipflop import binomial_stderr, read_errors
from path_eval.metrics.registry import metric_entry
from path_eval.plan import PlannedItem
from path_eval.tasks import flipflop

class FlipFlopEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        """One set of sequences per (task, length, seed), as `run` reads them."""
        return [FrozenSet.of_item(item, seed, partial(self._sequences, context.plan.spec(item), item, seed))
                for item in items for seed in item.seeds]

    @staticmethod
    def _sequences(spec, item: PlannedItem, seed: int) -> tuple:
        return flipflop.frozen_sequences(spec.name, spec.flipflop.p_ignore, item.length, seed, item.samples)

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        flipflop.check_vocabulary(lm.tokenizer.convert_tokens_to_ids, context.model.name, items[0].task)
        error_of = metric_entry("flipflop_error").function
        results = []
        for item in items:
            spec = context.plan.spec(item)
            per_seed, files, rows, output = [], [], [], LmEvalOutput(tasks={})
            for seed in item.seeds:
                frozen, tokens = self._sequences(spec, item, seed)
                predictions = argmax_predictions(lm, tokens)
                error = error_of(tokens, predictions, flipflop.READ)
                per_seed.append((error, binomial_stderr(error, read_errors(tokens, predictions, flipflop.READ)[1])))
                files.append(frozen)
                seed_rows = []
                for index in range(len(tokens)):
                    wrong, reads = read_errors(tokens[index:index + 1], predictions[index:index + 1], flipflop.READ)
                    seed_rows.append({"doc_id": index, "seed": seed, "reads": reads, "wrong": wrong})
                rows += seed_rows
                output.tasks |= native_output(f"{item.task}_{item.length}_s{seed}", {"flipflop_error": per_seed[-1]},
                                              seed_rows,
                                              [{"flipflop_error": [row["wrong"], row["reads"]]} for row in seed_rows],
                                              "next_token_argmax").tasks
            if lm.process_index != 0:
                continue  # every process holds every prediction: the first writes and reports
            write_jsonl_atomic(rows, context.sample_log(length_log_name(item.task, item.length)))
            results.append(TaskResult(task=item.task, length=item.length, metrics={"flipflop_error": per_seed},
                                      n=len(rows), data_files=files, data_fingerprint=fingerprint(files),
                                      seeds=item.seeds, lm_eval=output))
        return results
