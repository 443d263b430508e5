"""Metrics: per-sample functions of the original benchmarks (RULER's and PhoneBook's here, LongBench's
and BABILong's in their modules; every metric's entry is in `path_eval.metrics.registry`) and the
aggregations: means, plain means of estimates (as the paper's tables), perplexity from log-likelihoods."""
from __future__ import annotations

import math
import re

import numpy as np

# NVIDIA/RULER scripts/eval/synthetic/constants.py `postprocess_pred`: strip, turn every control
# character (0x00-0x1f) into a newline, strip again.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f]")


def ruler_postprocess(prediction: str) -> str:
    return _CONTROL_CHARACTERS.sub("\n", prediction.strip()).strip()


def string_match_all(prediction: str, references: list[str]) -> float:
    """RULER's metric for NIAH, vt, cwe and fwe: the fraction of references found in the prediction
    as case-insensitive substrings (0..1; RULER reports it x100)."""
    text = ruler_postprocess(prediction).lower()
    return sum(reference.lower() in text for reference in references) / len(references)


def string_match_part(prediction: str, references: list[str]) -> float:
    """RULER's metric for QA: 1 if any reference is found (case-insensitive substring), else 0."""
    text = ruler_postprocess(prediction).lower()
    return float(any(reference.lower() in text for reference in references))


def phonebook_exact_match(prediction: str, answer: str) -> float:
    """ArchScale's PhoneBook score: the generation's first line, stripped, equals the number."""
    return float(prediction.split("\n")[0].strip() == answer)


def mean_and_stderr(values: list[float]) -> tuple[float, float | None]:
    """A sample mean and its standard error (sample standard deviation / sqrt(n), lm-eval's for a
    mean); None from a single value."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def plain_mean(values: list[float], stderrs: list[float | None]) -> tuple[float, float | None]:
    """Mean of independent estimates; its stderr from theirs when all are known."""
    mean = sum(values) / len(values)
    if any(s is None for s in stderrs):
        return mean, None
    return mean, math.sqrt(sum(s * s for s in stderrs)) / len(values)


def perplexity_and_stderr(nll_sum: float, count: int, block_means: list[float]) -> tuple[float, float | None]:
    """exp(mean NLL); stderr by the delta method from the spread of the per-block means."""
    ppl = math.exp(nll_sum / count)
    if len(block_means) < 2:
        return ppl, None
    return ppl, ppl * float(np.std(block_means, ddof=1) / math.sqrt(len(block_means)))
