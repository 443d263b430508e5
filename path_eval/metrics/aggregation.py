"""How per-sample scores become a record's value and stderr: means, plain means of estimates (as the
paper's tables average), perplexity from log-likelihoods."""
from __future__ import annotations

import math

import numpy as np


def mean_and_stderr(values: list[float]) -> tuple[float, float | None]:
    """A sample mean and its standard error (sample standard deviation / sqrt(n), lm-eval's for a
    mean); None from a single value."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def plain_mean(values: list[float], stderrs: list[float | None],
               weights: list[float] | None = None) -> tuple[float, float | None]:
    """Mean of independent estimates, each weighing alike or by `weights` (an aggregate over samples:
    each part by its sample count, as lm-eval's groups with weight_by_size); its stderr from theirs
    (sqrt(sum (w_i se_i)^2) / sum w_i) when all are known."""
    weights = [1.0] * len(values) if weights is None else weights
    mean = sum(w * v for w, v in zip(weights, values)) / sum(weights)
    if any(s is None for s in stderrs):
        return mean, None
    return mean, math.sqrt(sum((w * s) * (w * s) for w, s in zip(weights, stderrs))) / sum(weights)


def perplexity_and_stderr(nll_sum: float, count: int, block_means: list[float]) -> tuple[float, float | None]:
    """exp(mean NLL); stderr by the delta method from the spread of the per-block means."""
    ppl = math.exp(nll_sum / count)
    if len(block_means) < 2:
        return ppl, None
    return ppl, ppl * float(np.std(block_means, ddof=1) / math.sqrt(len(block_means)))
