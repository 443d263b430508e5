"""Metrics: per-sample functions of the original benchmarks (registry `METRICS`, filled by the
long-context suites) and the suite-level aggregates (plain means, as the paper's tables)."""
from __future__ import annotations

import math
from typing import Callable

METRICS: dict[str, Callable] = {}


def plain_mean(values: list[float], stderrs: list[float | None]) -> tuple[float, float | None]:
    """Mean of independent estimates; its stderr from theirs when all are known."""
    mean = sum(values) / len(values)
    if any(s is None for s in stderrs):
        return mean, None
    return mean, math.sqrt(sum(s * s for s in stderrs)) / len(values)
