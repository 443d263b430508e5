"""Token tagging's accuracies against their definitions, computed here position by position."""
import numpy as np
import pytest

from path_eval.metrics import tagging
from path_eval.metrics.registry import metric_entry

U = tagging.UNLABELLED


def definitions(targets, predictions):
    right = labelled = 0
    whole, last = [], []
    for target, prediction in zip(targets.tolist(), predictions.tolist()):
        marks = [p == t for t, p in zip(target, prediction) if t != U]
        right, labelled = right + sum(marks), labelled + len(marks)
        if marks:  # a sequence without labels is judged on nothing
            whole.append(all(marks))
            last.append(marks[-1])
    return right / labelled, sum(whole) / len(whole), sum(last) / len(last)


def random_case(rng, sequences=50, positions=12, classes=4):
    targets = rng.integers(0, classes, size=(sequences, positions))
    targets[rng.random(targets.shape) < 0.6] = U
    targets[:3] = U  # some sequences have no label at all
    targets[3, 0] = 1  # and the sequences as a whole always some
    predictions = np.where(rng.random(targets.shape) < 0.7, np.where(targets == U, 0, targets),
                           rng.integers(0, classes + 2, size=targets.shape))
    return targets, predictions


def test_accuracies_equal_their_definitions_on_random_cases():
    rng = np.random.default_rng(0)
    for _ in range(200):
        targets, predictions = random_case(rng)
        expected = definitions(targets, predictions)
        got = (tagging.token_accuracy(targets, predictions), tagging.sequence_accuracy(targets, predictions),
               tagging.final_accuracy(targets, predictions))
        assert got == pytest.approx(expected, abs=1e-12)
        counts = tagging.sequence_counts(targets, predictions)
        for metric, value in zip(("token_accuracy", "sequence_accuracy", "final_accuracy"), expected):
            assert tagging.accuracy_and_stderr(counts, metric)[0] == pytest.approx(value, abs=1e-12)
            assert metric_entry(metric).function is getattr(tagging, metric)


def test_stderr_of_a_share_of_sequences_is_the_standard_error_of_their_mean():
    counts = tagging.sequence_counts(np.array([[1], [1], [1], [1]]), np.array([[1], [0], [1], [1]]))
    value, stderr = tagging.accuracy_and_stderr(counts, "sequence_accuracy")
    assert value == 0.75 and stderr == pytest.approx(np.std([1, 0, 1, 1], ddof=1) / 2)


def test_unlabelled_positions_do_not_count_and_label_free_sequences_are_refused():
    targets = np.array([[U, 3, U], [2, U, U], [U, U, U]])
    predictions = np.array([[9, 3, 9], [2, 9, 9], [1, 1, 1]])
    assert tagging.token_accuracy(targets, predictions) == tagging.sequence_accuracy(targets, predictions) == 1.0
    with pytest.raises(ValueError, match="no labelled position"):
        tagging.token_accuracy(np.array([[U, U]]), np.array([[0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        tagging.token_accuracy(targets, targets[:, :2])
