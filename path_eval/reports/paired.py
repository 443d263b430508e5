"""Paired tests of `compare`'s deltas on the per-sample logs of the runs compared.

Variants evaluated on the same samples differ less between themselves than their standard errors
say, so an unpaired test misses real differences. Each record's value is rebuilt from its run's
per-sample logs (`samples/<model>/`, found through the run's plan.json) as strata of per-sample
(numerator, denominator) pairs: a mean (numerator the score, denominator 1), a pooled rate
(flip-flop: wrong reads over reads), a perplexity (exp of summed NLL over tokens or words); several
seeds or an aggregate's parts are strata averaged with equal weight. A record whose logs do not give
back its value is not paired.

Samples are matched by identity: (doc_id, hash of the document) for lm-eval and generated tasks;
for a kind with logs of its own, as its row in path_eval/kinds/ says ((seed, sequence) for
flip-flop, the block's token hash for corpora). Where both runs hold the same
samples the delta is tested paired: McNemar's exact test for a single set of 0/1 scores, else a
paired bootstrap over the samples (10,000 resamples, the same indices for both runs, each stratum
resampled within itself). Otherwise the test is unpaired (a z test on the two standard errors) and
says why."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS, SamplePairs
from path_eval.metrics.registry import REGISTRY
from path_eval.plan.stored import stored_plan
from path_eval.results import ResultRecord
from path_eval.results.sample_logs import log_names, read_sample_log

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
BOOTSTRAP_CHUNK = 500  # resamples drawn at once (memory: CHUNK x samples indices)
FEW_SAMPLES = 20  # below this a bootstrap's resamples are too alike for its p to mean much


def mcnemar_floor(samples: int) -> float:
    """The least p McNemar's exact test can give on `samples` paired 0/1 scores: every sample
    discordant, all one way, p = 2 * 0.5^samples."""
    return min(1.0, 2 * 0.5 ** samples)


# The fewest samples on which McNemar's exact test can reach p < ALPHA (6 at 0.05: 2 * 0.5^6 = 0.031).
MCNEMAR_FEWEST = next(n for n in range(1, 64) if mcnemar_floor(n) < ALPHA)


@dataclass
class Stratum:
    """Per-sample (numerator, denominator) pairs with their identities; the value is
    sum(numerator) / sum(denominator), through exp for a perplexity."""

    keys: list
    numerator: np.ndarray
    denominator: np.ndarray
    exponential: bool = False

    def statistic(self, numerator_sums, denominator_sums):
        ratio = numerator_sums / denominator_sums
        return np.exp(ratio) if self.exponential else ratio

    def value(self) -> float:
        return float(self.statistic(self.numerator.sum(), self.denominator.sum()))

    def is_binary(self) -> bool:
        return not self.exponential and bool(np.all(self.denominator == 1)) and \
            bool(np.all(np.isin(self.numerator, (0.0, 1.0))))


@dataclass
class SampleScores:
    """A record's value as the weighted sum of its strata's values."""

    strata: list[tuple[float, Stratum]]

    def value(self) -> float:
        return sum(weight * stratum.value() for weight, stratum in self.strata)


@dataclass
class DeltaTest:
    method: str  # McNemar exact, paired bootstrap, unpaired z
    p: float | None  # None: no test possible (no standard errors)
    note: str | None = None  # why the test is unpaired, why its p is weak, or that it cannot reach ALPHA
    floor: float = 0.0  # the least p the test can give at its sample count, whatever the scores

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < ALPHA

    @property
    def cannot_reach(self) -> bool:
        """Whether no scores on this many samples could make the test significant."""
        return self.floor >= ALPHA

    def cell(self) -> str:
        p = "-" if self.p is None else "p<0.0001" if self.p < 1e-4 else f"p={self.p:.2g}"
        return f"{self.method} {p}" + (f" ({self.note})" if self.note else "")


def mcnemar_exact(first: np.ndarray, second: np.ndarray) -> float:
    """Two-sided exact McNemar test of paired 0/1 scores: the discordant pairs split binomially
    with p = 1/2 under no difference."""
    only_first = int(np.sum((first == 1) & (second == 0)))
    only_second = int(np.sum((first == 0) & (second == 1)))
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(only_first, only_second) + 1)) / 2 ** discordant
    return min(1.0, 2 * tail)


def paired_bootstrap(first: SampleScores, second: SampleScores, resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED) -> float:
    """Two-sided bootstrap p of second - first: the samples of each stratum resampled with the same
    indices for both runs; p is twice the smaller share of resampled deltas on either side of 0."""
    rng = np.random.default_rng(seed)
    deltas = np.zeros(resamples)
    for (weight, a), (_, b) in zip(first.strata, second.strata):
        for start in range(0, resamples, BOOTSTRAP_CHUNK):
            size = min(BOOTSTRAP_CHUNK, resamples - start)
            index = rng.integers(0, len(a.keys), size=(size, len(a.keys)))
            value_a = a.statistic(a.numerator[index].sum(1), a.denominator[index].sum(1))
            value_b = b.statistic(b.numerator[index].sum(1), b.denominator[index].sum(1))
            deltas[start:start + size] += weight * (value_b - value_a)
    return float(min(1.0, 2 * min(np.mean(deltas <= 0), np.mean(deltas >= 0))))


def unreachable_note(tests: list[DeltaTest]) -> str:
    """"; " and a sentence on the tests that no scores could make significant at their sample count
    (McNemar exact on fewer than MCNEMAR_FEWEST samples), or "" where there are none: without it an
    unmarked cell would read as no difference found."""
    return unreachable_sentence([t.floor for t in tests if t.cannot_reach])


def unreachable_sentence(floors: list[float]) -> str:
    """The sentence of `unreachable_note` for tests of these least p values."""
    if not floors:
        return ""
    least = ", ".join(f"{floor:.2g}" for floor in sorted(set(floors), reverse=True))
    return (f"; {len(floors)} McNemar test(s) cannot reach p < {ALPHA:g} at their sample count (least p {least}, "
            f"2 * 0.5^samples): no * can appear there; {MCNEMAR_FEWEST} samples or more could")


def unpaired_z(first: ResultRecord, second: ResultRecord, because: str) -> DeltaTest:
    if first.stderr is None or second.stderr is None:
        return DeltaTest("unpaired z", None, because)
    spread = math.hypot(first.stderr, second.stderr)
    delta = abs(second.value - first.value)
    p = (1.0 if delta == 0 else 0.0) if spread == 0 else math.erfc(delta / spread / math.sqrt(2))
    return DeltaTest("unpaired z", p, because)


def aligned(first: SampleScores, second: SampleScores) -> SampleScores | None:
    """`second`'s strata in the sample order of `first`'s, or None where they hold other samples."""
    if len(first.strata) != len(second.strata):
        return None
    strata = []
    for (_, a), (weight, b) in zip(first.strata, second.strata):
        position = {key: i for i, key in enumerate(b.keys)}
        if len(a.keys) != len(b.keys) or any(key not in position for key in a.keys):
            return None
        order = np.array([position[key] for key in a.keys], dtype=int)
        strata.append((weight, Stratum(a.keys, b.numerator[order], b.denominator[order], b.exponential)))
    return SampleScores(strata)


def delta_test(first: ResultRecord, first_scores: SampleScores | str, second: ResultRecord,
               second_scores: SampleScores | str) -> DeltaTest:
    """The test of second - first: paired on the samples where both runs' logs hold the same ones."""
    for scores in (first_scores, second_scores):
        if isinstance(scores, str):
            return unpaired_z(first, second, scores)
    second_aligned = aligned(first_scores, second_scores)
    if second_aligned is None:
        return unpaired_z(first, second, "samples differ")
    if len(first_scores.strata) == 1:
        (_, a), (_, b) = first_scores.strata[0], second_aligned.strata[0]
        if a.is_binary() and b.is_binary():
            floor = mcnemar_floor(len(a.keys))
            return DeltaTest("McNemar exact", mcnemar_exact(a.numerator, b.numerator),
                             f"{len(a.keys)} samples: p >= {floor:.2g}" if floor >= ALPHA else None, floor)
    fewest = min(len(stratum.keys) for _, stratum in first_scores.strata)
    return DeltaTest("paired bootstrap", paired_bootstrap(first_scores, second_aligned),
                     f"only {fewest} samples" if fewest < FEW_SAMPLES else None)


def doc_key(row: dict, seen: dict) -> tuple:
    """A sample's identity: its doc_id and a hash of its document (and which repeat it is)."""
    digest = hashlib.sha256(json.dumps(row.get("doc"), sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    key = (row.get("doc_id"), digest)
    seen[key] = seen.get(key, -1) + 1
    return key + (seen[key],)


def is_perplexity(metric: str) -> bool:
    entry = REGISTRY.get(metric)
    return entry is not None and entry.aggregation == "perplexity"


def pair_of(metric: str, score) -> tuple[float, float]:
    """A per-sample score as (numerator, denominator) under the metric's aggregation: lm-eval logs a
    perplexity's sample as its log-likelihood, or as [log-likelihood, words or bytes]."""
    if is_perplexity(metric):
        loglikelihood, weight = score if isinstance(score, list) else (score, 1)
        return -float(loglikelihood), float(weight)
    if isinstance(score, list):
        raise ValueError(f"{metric}'s per-sample scores are not numbers")
    return float(score), 1.0


def own_log_strata(pairing: SamplePairs, rows: list[dict]) -> list[tuple[float, Stratum]]:
    """The strata of a kind's own per-sample log: one per `stratum` value (flip-flop: per seed),
    of equal weight; a single stratum without one (corpus blocks)."""
    groups: dict = {}
    for row in rows:
        groups.setdefault(pairing.stratum(row) if pairing.stratum else None, []).append(row)
    return [(1 / len(groups), Stratum([pairing.key(row) for row in group],
                                      np.array([pairing.numerator(row) for row in group], float),
                                      np.array([pairing.denominator(row) for row in group], float),
                                      exponential=pairing.exponential))
            for group in groups.values()]


class RunSamples:
    """The per-sample logs of one run folder, read as each record asks for them."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._logs: dict[tuple[str, str], list[dict]] = {}
        self._suites: dict[str, object] = {}  # the stored suite per name, read once
        plan = stored_plan(self.folder)  # None for a bare results.json
        self.items = plan.items if plan is not None else None

    def scores(self, record: ResultRecord) -> SampleScores | str:
        """The record's value rebuilt from the logs, or a short reason why it cannot be."""
        from path_eval.reports.stored import stored_suite

        if self.items is None:
            return "no per-sample log"
        try:
            if record.suite not in self._suites:
                self._suites[record.suite] = stored_suite(self.folder, record.suite)
            suite = self._suites[record.suite]
            parts = next((aggregate.mean_of for aggregate in suite.aggregates if aggregate.name == record.task),
                         [f"{record.task}/{record.metric}"])
            strata = []
            for part in parts:
                task, metric = part.split("/", 1)
                found = self.task_strata(suite, record.model, task, metric, record.length, record.length_bucket)
                strata += [(weight / len(parts), stratum) for weight, stratum in found]
        except (OSError, KeyError, TypeError, ValueError, PathEvalError):  # a log missing, cut short, or foreign
            return "no per-sample log"
        scores = SampleScores(strata)
        if not strata or any(not stratum.keys for _, stratum in strata):
            return "no per-sample log"
        if not math.isclose(scores.value(), record.value, rel_tol=1e-6, abs_tol=1e-9):
            return "the per-sample log does not give the value"
        return scores

    def rows(self, model: str, name: str) -> list[dict]:
        if (model, name) not in self._logs:
            self._logs[model, name] = read_sample_log(self.folder, model, name)
        return self._logs[model, name]

    def task_strata(self, suite, model: str, task: str, metric: str, length: int | None,
                    length_bucket: str | None) -> list[tuple[float, Stratum]]:
        [item] = [i for i in self.items if i.task == task and i.length == length and model in i.models]
        names = log_names(item)
        pairing = KINDS[item.kind].pairing
        if isinstance(pairing, dict):  # a log of several metrics: the record's
            pairing = pairing[metric]
        if pairing is not None:  # the kind's own logs, read as its row says
            return own_log_strata(pairing, [row for name in names for row in self.rows(model, name)])
        strata = []
        for name in names:
            rows = self.rows(model, name)
            if length_bucket is not None:
                buckets = suite.length_buckets
                rows = [row for row in rows if buckets.label(row["doc"][buckets.field]) == length_bucket]
            seen: dict = {}
            pairs = np.array([pair_of(metric, row["scores"][metric]) for row in rows], float).reshape(-1, 2)
            strata.append((1 / len(names), Stratum([doc_key(row, seen) for row in rows], pairs[:, 0], pairs[:, 1],
                                                   exponential=is_perplexity(metric))))
        return strata
