"""Token tagging's accuracies (the state-tracking diagnostics: the A5 word problem, MQRAR-N): a
sequence of inputs with a label at some or all positions, the model's prediction at a position its
argmax over the whole vocabulary after the inputs up to and including it (one teacher-forced forward
under a causal mask), so a token that is no label counts as wrong. Unlabelled positions hold
`UNLABELLED`.

- `token_accuracy`: labelled positions predicted right over all labelled positions, pooled over the
  sequences (every position weighs the same).
- `sequence_accuracy`: the share of sequences whose every labelled position is right.
- `final_accuracy`: the share of sequences whose last labelled position is right (for the A5 word
  problem: the product of the whole word; in the identity form, the answer to "is the word the
  identity?").

A sequence without a labelled position (MQRAR-N at large N: no key assigned N times before a query)
has nothing to judge: it counts in neither share.

Merrill et al. report token and sequence accuracy; neither they nor the PaTH paper say which one
"solved: above 90%" applies to, so the diagnostics report all three."""
from __future__ import annotations

import numpy as np

UNLABELLED = -100


def _checked(targets, predictions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    targets, predictions = np.asarray(targets), np.asarray(predictions)
    if targets.ndim != 2 or targets.shape != predictions.shape:
        raise ValueError(f"targets {targets.shape} and predictions {predictions.shape} must be one [sequences, "
                         "positions] shape")
    labelled = targets != UNLABELLED
    if not labelled.any():
        raise ValueError("the sequences hold no labelled position: their accuracies are undefined")
    return targets, predictions, labelled


# What each sequence counts, in the order of `sequence_counts`' columns: labelled positions right,
# labelled positions, every labelled position right (0/1), the last one right (0/1), any label (0/1).
COUNTS = ("right", "labelled", "all_right", "final_right", "has_label")


def sequence_counts(targets, predictions) -> np.ndarray:
    """Per sequence its COUNTS, int64 [N, 5]: what the per-sample logs keep and the three accuracies
    are sums of (a sequence without labels: zeros)."""
    targets, predictions, labelled = _checked(targets, predictions)
    right = (predictions == targets) & labelled
    has_label = labelled.any(axis=1)
    last = labelled.shape[1] - 1 - np.argmax(labelled[:, ::-1], axis=1)
    rows = np.arange(len(targets))
    return np.stack([right.sum(1), labelled.sum(1), has_label & (right.sum(1) == labelled.sum(1)),
                     has_label & right[rows, last], has_label], axis=1).astype(np.int64)


def token_accuracy(targets, predictions) -> float:
    counts = sequence_counts(targets, predictions)
    return float(counts[:, 0].sum() / counts[:, 1].sum())


def sequence_accuracy(targets, predictions) -> float:
    counts = sequence_counts(targets, predictions)
    return float(counts[:, 2].sum() / counts[:, 4].sum())


def final_accuracy(targets, predictions) -> float:
    counts = sequence_counts(targets, predictions)
    return float(counts[:, 3].sum() / counts[:, 4].sum())


# The counts each metric is the sum of, over the sum of.
RATIOS = {"token_accuracy": ("right", "labelled"), "sequence_accuracy": ("all_right", "has_label"),
          "final_accuracy": ("final_right", "has_label")}


def accuracy_and_stderr(counts: np.ndarray, metric: str) -> tuple[float, float | None]:
    """A metric from per-sequence counts (`sequence_counts`) and its standard error over sequences:
    a mean's for a share of sequences, the ratio estimator's for token accuracy (the positions of one
    sequence are not independent samples: its labels are chained through one state)."""
    numerator, denominator = (COUNTS.index(name) for name in RATIOS[metric])
    counts = counts[counts[:, COUNTS.index("has_label")] > 0]  # sequences without labels weigh nothing
    right, total = counts[:, numerator].astype(float), counts[:, denominator].astype(float)
    value = float(right.sum() / total.sum())
    if len(counts) < 2:
        return value, None
    residual = (right - value * total) / total.mean()
    return value, float(np.sqrt(residual.var(ddof=1) / len(counts)))


def logged_counts(rows: list[dict]) -> np.ndarray:
    """`sequence_counts` recomputed from per-sample log rows, each holding the labels (`target`) and
    the predictions there (`prediction`) of one sequence's labelled positions, in order."""
    counts = []
    for row in rows:
        target, prediction = row["target"], row["prediction"]
        if not (isinstance(target, list) and isinstance(prediction, list) and len(target) == len(prediction)):
            raise ValueError(f"sample {row.get('doc_id', '?')} holds no target and prediction lists of one length")
        right = sum(t == p for t, p in zip(target, prediction))
        has_label = bool(target)
        counts.append([right, len(target), has_label and right == len(target),
                       has_label and target[-1] == prediction[-1], has_label])
    return np.array(counts, dtype=np.int64).reshape(-1, len(COUNTS))
