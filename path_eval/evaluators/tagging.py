"""Token-tagging tasks (the state-tracking diagnostics: the A5 word problem, MQRAR-N): frozen
sequences with a label at some positions, one teacher-forced forward per batch, the argmax at every
position, and the registry's tagging accuracies (path_eval/metrics/tagging.py) per seed.

Each sequence's row in the per-sample log keeps what rescoring needs and what the sample was: the
input ids, the labelled positions with their labels and the model's predictions there, and the
counts the accuracies sum (right, labelled, all right, last right, has a label)."""
from __future__ import annotations

from functools import partial

import numpy as np

from path_eval.atomic_files import write_jsonl_atomic
from path_eval.data import fingerprint
from path_eval.evaluators.argmax import argmax_predictions
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, LmEvalOutput, TaskResult, native_output
from path_eval.kinds import length_log_name
from path_eval.metrics.tagging import COUNTS, UNLABELLED, accuracy_and_stderr, sequence_counts
from path_eval.plan import PlannedItem
from path_eval.tasks import a5, mqrar

def sample_rows(inputs: np.ndarray, targets: np.ndarray, predictions: np.ndarray, seed: int) -> list[dict]:
    """One log row per sequence (above)."""
    rows = []
    for index, (tokens, labels, predicted, counts) in enumerate(
            zip(inputs, targets, predictions, sequence_counts(targets, predictions))):
        positions = np.nonzero(labels != UNLABELLED)[0]
        rows.append({"doc_id": index, "seed": seed, "input": tokens.tolist(), "positions": positions.tolist(),
                     "target": labels[positions].tolist(), "prediction": predicted[positions].tolist(),
                     **dict(zip(COUNTS, counts.tolist()))})
    return rows


def row_counts(rows: list[dict]) -> np.ndarray:
    """The rows' counts as `sequence_counts` gives them ([N, 5])."""
    return np.array([[row[field] for field in COUNTS] for row in rows], dtype=np.int64)


class TaggingEvaluator:
    """The evaluator of a token-tagging kind; a subclass gives whose vocabulary its sequences use
    (`vocabulary`: a SymbolVocabulary) and how they are made (`sequences(spec, item, seed)` ->
    (frozen file, inputs [N, T], targets [N, T]) of one item at one seed)."""

    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        """One set of sequences per (task, length, seed), as `run` reads them."""
        return [FrozenSet.of_item(item, seed, partial(self.sequences, context.plan.spec(item), item, seed))
                for item in items for seed in item.seeds]

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        self.vocabulary.check(lm.tokenizer.convert_tokens_to_ids, context.model.name, items[0].task)
        results = []
        for item in items:
            spec = context.plan.spec(item)
            metrics = [m.name for m in spec.metrics]
            per_seed: dict[str, list] = {metric: [] for metric in metrics}
            files, rows, output = [], [], LmEvalOutput(tasks={})
            for seed in item.seeds:
                frozen, inputs, targets = self.sequences(spec, item, seed)
                seed_rows = sample_rows(inputs, targets, argmax_predictions(lm, inputs), seed)
                counts = row_counts(seed_rows)
                values = {metric: accuracy_and_stderr(counts, metric) for metric in metrics}
                for metric in metrics:
                    per_seed[metric].append(values[metric])
                files.append(frozen)
                rows += seed_rows
                output.tasks |= native_output(f"{item.task}_{item.length}_s{seed}", values, seed_rows,
                                              [{field: row[field] for field in COUNTS} for row in seed_rows],
                                              "token_tagging_argmax").tasks
            if lm.process_index != 0:
                continue  # every process holds every prediction: the first writes and reports
            write_jsonl_atomic(rows, context.sample_log(length_log_name(item.task, item.length)))
            results.append(TaskResult(task=item.task, length=item.length, metrics=per_seed, n=len(rows),
                                      data_files=files, data_fingerprint=fingerprint(files), seeds=item.seeds,
                                      lm_eval=output))
        return results


class A5Evaluator(TaggingEvaluator):
    vocabulary = a5.VOCABULARY

    @staticmethod
    def sequences(spec, item: PlannedItem, seed: int) -> tuple:
        return a5.frozen_words(spec.name, spec.options.form, item.length, seed, item.samples)


class MqrarEvaluator(TaggingEvaluator):
    vocabulary = mqrar.VOCABULARY

    @staticmethod
    def sequences(spec, item: PlannedItem, seed: int) -> tuple:
        return mqrar.frozen_sequences(spec.name, spec.options.n, spec.options.pairs, item.length, seed, item.samples)
