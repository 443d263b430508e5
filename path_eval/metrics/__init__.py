"""Metrics: per-sample functions of the original benchmarks (registry `METRICS`, name -> function
with the original's semantics) and the suite-level aggregates (plain means, as the paper's tables)."""
from __future__ import annotations

import math
import re
from typing import Callable

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


METRICS: dict[str, Callable[[str, object], float]] = {
    "string_match_all": string_match_all,
    "string_match_part": string_match_part,
    "phonebook_exact_match": phonebook_exact_match,
}


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
