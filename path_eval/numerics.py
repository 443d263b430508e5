"""Numerical comparison helpers shared by tests, benchmarks and the zoo's parity check."""
from __future__ import annotations

import torch


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """||actual - expected|| / ||expected|| over all elements, computed in float64.

    Norm-wise rather than element-wise: one number that weighs every element by its size, so entries
    near zero (where an element-wise ratio explodes) do not decide the result, and one tolerance fits
    tensors of any shape. Float64 so that the measure itself adds no rounding to what it measures."""
    return ((actual.double() - expected.double()).norm() / expected.double().norm()).item()
