"""What the token-tagging kinds (`a5`, `mqrar`: the state-tracking diagnostics) share: their
metrics, their plan (the sequences are made from the run's seeds, nothing is read), the vocabulary
check of a model's files, how `rescore` scores their logs again (from each row's labels and
predictions), and how `compare`'s paired tests read them: per metric, the counts each sequence's
row keeps (path_eval/metrics/tagging.py), rows matched by (seed, sequence), each seed a stratum."""
from __future__ import annotations

from typing import TYPE_CHECKING

from path_eval.kinds.base import Kind, Planning, PlannedFields, SamplePairs, one_log_per_length
from path_eval.metrics.tagging import RATIOS, accuracy_and_stderr, logged_counts

if TYPE_CHECKING:
    from typing import Callable

    from path_eval.suites import TaskSpec
    from path_eval.tasks.symbols import SymbolVocabulary

METRICS = frozenset(RATIOS)


def plan(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    return PlannedFields()  # the sequences are made from the seeds: nothing to read


def rescore_log(task: TaskSpec, rows: list[dict], seeds: list[int]) -> dict[str, list[tuple[float, float | None]]]:
    """Each metric's (value, stderr) per seed, from the logged labels and predictions alone (not
    the counts the log also keeps)."""
    by_seed = {seed: [row for row in rows if row.get("seed") == seed] for seed in seeds}
    return {metric.name: [accuracy_and_stderr(logged_counts(by_seed[seed]), metric.name) for seed in seeds]
            for metric in task.metrics}


def pairing() -> dict[str, SamplePairs]:
    def ratio(numerator: str, denominator: str) -> SamplePairs:
        return SamplePairs(key=lambda row: (row["seed"], row["doc_id"]), numerator=lambda row: row[numerator],
                           denominator=lambda row: row[denominator], stratum=lambda row: row["seed"])

    return {metric: ratio(*counts) for metric, counts in RATIOS.items()}


def tagging_kind(name: str, options: type, evaluator: str, vocabulary: SymbolVocabulary,
                 describe: Callable[[TaskSpec], str], context: Callable[[int], int],
                 check_length: Callable[[TaskSpec, int], None]) -> Kind:
    """A token-tagging kind's row: what differs between them given, the rest shared. A model whose
    tokenizer files give the vocabulary's symbols other ids is refused before any model loads."""
    return Kind(name=name, key=name, options=options, evaluator=evaluator, describe=describe, plan=plan,
                log_names=one_log_per_length, sampled=True, context=context, metrics=METRICS,
                check_length=check_length, pairing=pairing(), log_scorer=rescore_log,
                check_model=lambda task, model: vocabulary.check_files(model.path, model.name, task.name))
