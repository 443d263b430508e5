"""Numerical comparisons shared by the checks against references."""
from __future__ import annotations

import torch


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """||actual - expected|| / ||expected|| in float64 (the Frobenius norm over every element)."""
    return ((actual.double() - expected.double()).norm() / expected.double().norm()).item()
