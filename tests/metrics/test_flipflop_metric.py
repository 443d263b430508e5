"""The registered `flipflop_error` metric on hand-made cases: pooled over every read of every
sequence, lower is better, shown as a percentage."""
import pytest

from path_eval.metrics.flipflop import binomial_stderr, flipflop_error
from path_eval.metrics.registry import metric_entry

W, R, I, ZERO, ONE = 0, 1, 2, 3, 4  # the flip-flop vocabulary's ids


def test_error_is_pooled_over_the_reads_of_all_sequences():
    tokens = [[W, ONE, R, ONE, R, ONE, I, ZERO],   # two reads
              [W, ZERO, I, ONE, I, ONE, R, ZERO]]  # one read
    # predictions[t] guesses token t + 1: the first sequence's second read and the second's read are wrong
    predictions = [[0, 0, ONE, 0, ZERO, 0, 0, 0],
                   [0, 0, 0, 0, 0, 0, ONE, 0]]
    assert flipflop_error(tokens, predictions, R) == pytest.approx(2 / 3)  # not the mean of 1/2 and 1
    right = [[0, 0, ONE, 0, ONE, 0, 0, 0], [0, 0, 0, 0, 0, 0, ZERO, 0]]
    assert flipflop_error(tokens, right, R) == 0.0
    assert flipflop_error(tokens, [[0, 0, R, 0, W, 0, 0, 0], [0] * 8], R) == 1.0  # a non-bit guess is wrong


def test_no_reads_and_mismatched_shapes_are_errors():
    with pytest.raises(ValueError, match="no read"):
        flipflop_error([[W, ONE, I, ZERO]], [[0, 0, 0, 0]], R)
    with pytest.raises(ValueError, match="differ in shape"):
        flipflop_error([[W, ONE, R, ONE]], [[0, 0, 0]], R)


def test_registry_entry_and_stderr():
    entry = metric_entry("flipflop_error")
    assert (entry.higher_is_better, entry.display, entry.aggregation) == (False, "percent", "pooled")
    assert entry.function is flipflop_error
    assert binomial_stderr(0.0, 100) == 0.0 and binomial_stderr(0.5, 100) == pytest.approx(0.05)
