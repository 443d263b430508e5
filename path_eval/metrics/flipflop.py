"""Flip-flop language modelling's error (Liu et al. 2023): the share of read positions whose
predicted bit is wrong. A read position is the bit that follows a read instruction; the prediction
there is the model's argmax after the true prefix (teacher-forced), over the whole vocabulary, so a
token that is not a bit counts as wrong."""
from __future__ import annotations

import numpy as np


def read_positions(tokens: np.ndarray, read_token: int) -> np.ndarray:
    """Boolean mask [N, T] of the bit positions that follow a read instruction."""
    tokens = np.asarray(tokens)
    mask = np.zeros(tokens.shape, dtype=bool)
    mask[:, 1:] = tokens[:, :-1] == read_token
    return mask


def read_errors(tokens: np.ndarray, predictions: np.ndarray, read_token: int) -> tuple[int, int]:
    """(wrong, reads): predictions[n, t] is the model's next token after tokens[n, :t + 1]; a read
    is wrong when the prediction at the read instruction is not the bit that follows it."""
    tokens, predictions = np.asarray(tokens), np.asarray(predictions)
    if tokens.shape != predictions.shape:
        raise ValueError(f"tokens {tokens.shape} and predictions {predictions.shape} differ in shape")
    targets = read_positions(tokens, read_token)
    predicted = np.zeros(tokens.shape, dtype=predictions.dtype)
    predicted[:, 1:] = predictions[:, :-1]
    wrong = int((predicted[targets] != tokens[targets]).sum())
    return wrong, int(targets.sum())


def flipflop_error(tokens: np.ndarray, predictions: np.ndarray, read_token: int) -> float:
    """The share of read positions, over all sequences together, whose predicted bit is wrong."""
    wrong, reads = read_errors(tokens, predictions, read_token)
    if not reads:
        raise ValueError("the sequences hold no read instruction: the flip-flop error is undefined")
    return wrong / reads


def binomial_stderr(error: float, reads: int) -> float:
    """The standard error of a share of `reads` positions (reads taken as independent)."""
    return float(np.sqrt(error * (1 - error) / reads))
