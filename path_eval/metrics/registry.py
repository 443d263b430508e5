"""The metric registry: one entry per metric a suite may name, holding every fact about it that the
pipeline needs. Suites check their metric names here, generated tasks and the benchmark adapters take
their scorers and reference fields from here, records take `higher_is_better` from here, and reports
and `check` take the display unit and the direction from here.

lm-eval's own metrics (acc, perplexity, ...) have entries without a function: lm-eval computes them.
`score` is the unit of the suites' aggregates (plain means of other metrics)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal

from path_eval.errors import PathEvalError
from path_eval.metrics.retrieval import phonebook_exact_match, string_match_all, string_match_part
from path_eval.metrics import babilong, flipflop, longbench, tagging, theoremqa

Display = Literal["percent", "value"]  # percent: a fraction shown x100; value: shown as stored
Aggregation = Literal["mean", "perplexity", "pooled"]  # perplexity: exp of the mean negative log-likelihood;
# pooled: the wrong (or right) items of all samples together over their count (flip-flop: read positions;
# token tagging: labelled positions)


@dataclass(frozen=True)
class Metric:
    name: str
    function: Callable[..., float] | None  # the per-sample scorer; None where lm-eval computes the metric
    higher_is_better: bool
    display: Display
    benchmark: str | None = None  # whose definition the function follows (None: lm-eval's own metric)
    reference_field: str | None = None  # the sample field the prediction is compared against
    aggregation: Aggregation = "mean"

    @property
    def bounds(self) -> tuple[float, float]:
        """The values the metric can take, ends included: a fraction (shown x100) lies in 0..1, a
        perplexity (the exp of a mean negative log-likelihood) is at least 1, any other value (bits
        per byte) at least 0. `check` refuses a stored value outside them, and any value not finite."""
        if self.display == "percent":
            return 0.0, 1.0
        return (1.0 if self.aggregation == "perplexity" else 0.0), math.inf


def _lm_eval(name: str, higher_is_better: bool, display: Display, aggregation: Aggregation = "mean") -> Metric:
    return Metric(name, None, higher_is_better, display, aggregation=aggregation)


def _scored(function: Callable[..., float], benchmark: str, reference_field: str) -> Metric:
    """A metric we compute per sample: a fraction in 0..1 (the papers print it x100), higher better."""
    return Metric(function.__name__, function, True, "percent", benchmark, reference_field)


REGISTRY: dict[str, Metric] = {entry.name: entry for entry in (
    _lm_eval("acc", True, "percent"),
    _lm_eval("acc_norm", True, "percent"),
    _lm_eval("exact_match", True, "percent"),
    _lm_eval("perplexity", False, "value", "perplexity"),
    _lm_eval("word_perplexity", False, "value", "perplexity"),
    _lm_eval("byte_perplexity", False, "value", "perplexity"),
    _lm_eval("bits_per_byte", False, "value"),
    _scored(string_match_all, "RULER", "outputs"),
    _scored(string_match_part, "RULER", "outputs"),
    _scored(phonebook_exact_match, "PhoneBook", "answer"),
    *(_scored(function, "LongBench", "answers") for function in (
        longbench.qa_f1_score, longbench.rouge_score, longbench.classification_score, longbench.code_sim_score,
        longbench.count_score, longbench.retrieval_score)),
    _scored(babilong.babilong_accuracy, "BABILong", "target"),
    _scored(babilong.target_substring, "BABILong", "target"),
    # TheoremQA's rule (path_eval/metrics/theoremqa.py): the row's Answer read by its Answer_type
    _scored(theoremqa.theoremqa_accuracy, "TheoremQA", "Answer"),
    Metric("flipflop_error", flipflop.flipflop_error, False, "percent", "Flip-flop", aggregation="pooled"),
    Metric("token_accuracy", tagging.token_accuracy, True, "percent", "State tracking", aggregation="pooled"),
    Metric("sequence_accuracy", tagging.sequence_accuracy, True, "percent", "State tracking"),
    Metric("final_accuracy", tagging.final_accuracy, True, "percent", "State tracking"),
    # Code benchmarks: whether a sample's one greedy program passed its tests, scored from its
    # sandboxed verdict (path_eval/tasks/code.py), the mean over problems.
    Metric("pass@1", None, True, "percent", "Code"),
    Metric("score", None, True, "percent"),
)}


def metric_entry(name: str) -> Metric:
    """The registry's entry for `name`; an unknown name is a one-line error listing the known ones."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise PathEvalError(f"unknown metric {name!r}: choose one of {', '.join(REGISTRY)} "
                            "(or register it in path_eval/metrics/registry.py)")
    return entry


def metrics_of(*benchmarks: str) -> dict[str, Metric]:
    """The metrics that follow these benchmarks' definitions, by name."""
    return {name: entry for name, entry in REGISTRY.items() if entry.benchmark in benchmarks}


def shown_as_percent(name: str) -> bool:
    """Whether reports show the metric x100; a metric the registry lacks is shown as stored."""
    entry = REGISTRY.get(name)
    return entry is not None and entry.display == "percent"


def impossible_value(name: str, value) -> str | None:
    """Why `value` cannot be a value of metric `name` (not a number, NaN, infinite, outside the
    registry's bounds), or None; a metric the registry lacks is only asked to be a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "is not a number"
    if not math.isfinite(value):
        return "is not a finite number"
    entry = REGISTRY.get(name)
    low, high = entry.bounds if entry else (-math.inf, math.inf)
    if not low <= value <= high:
        shown = "a fraction" if entry.display == "percent" else f"a {name}"
        return f"is outside {low:g}..{high:g}, where {shown} lies"
    return None


def higher_is_better(name: str, stored: bool) -> bool:
    """The metric's direction; `stored` (a record's own field) for a metric the registry lacks."""
    entry = REGISTRY.get(name)
    return stored if entry is None else entry.higher_is_better


def lm_eval_metric_list(names: list[str]) -> list[dict]:
    """lm-eval's `metric_list` for metrics we score per sample (lm-eval aggregates them)."""
    return [{"metric": name, "aggregation": metric_entry(name).aggregation,
             "higher_is_better": metric_entry(name).higher_is_better} for name in names]
