"""The flip-flop generator and its error function, against hand-made cases."""
import numpy as np
import pytest

from path_eval.tasks import flipflop
from path_eval.tasks.flipflop import IGNORE, ONE, READ, WRITE, ZERO


def test_error_is_the_share_of_reads_whose_predicted_bit_is_wrong():
    #          w  1    i  0     r  1    w  0     r  0
    tokens = [[WRITE, ONE, IGNORE, ZERO, READ, ONE, WRITE, ZERO, READ, ZERO]]
    right = [[0, 0, 0, 0, ONE, 0, 0, 0, ZERO, 0]]  # predictions[t] is the guess for token t + 1
    assert flipflop.read_errors(tokens, right) == (0, 2)
    one_wrong = [[ZERO, ZERO, ZERO, ZERO, ZERO, ONE, ONE, ONE, ZERO, ONE]]  # the first read guesses 0
    assert flipflop.read_errors(tokens, one_wrong) == (1, 2)
    assert flipflop.read_error_rate(tokens, one_wrong) == 0.5
    not_a_bit = [[0, 0, 0, 0, READ, 0, 0, 0, ZERO, 0]]  # any other token counts as wrong too
    assert flipflop.read_error_rate(tokens, not_a_bit) == 0.5


def test_read_positions_are_the_bits_after_a_read():
    tokens = np.array([[WRITE, ONE, READ, ONE, IGNORE, ZERO, READ, ONE]])
    assert flipflop.read_positions(tokens).tolist() == [[False, False, False, True, False, False, False, True]]


def reference_reads_ok(sequence) -> bool:
    """Every read's bit is the latest written bit (plain loop)."""
    latest = None
    for instruction, bit in zip(sequence[0::2], sequence[1::2]):
        if instruction == WRITE:
            latest = bit
        elif instruction == READ and bit != latest:
            return False
    return True


@pytest.mark.parametrize("p_ignore", [0.1, 0.8, 0.98])
def test_sequences_follow_the_language(p_ignore):
    seqs = flipflop.generate(64, p_ignore, seed=3)
    assert seqs.shape == (64, 512)
    assert (seqs[:, 0] == WRITE).all() and (seqs[:, -2] == READ).all()
    assert np.isin(seqs[:, 0::2], [WRITE, READ, IGNORE]).all() and np.isin(seqs[:, 1::2], [ZERO, ONE]).all()
    assert all(reference_reads_ok(s) for s in seqs)
    inner = seqs[:, 2:-2:2]
    assert abs((inner == IGNORE).mean() - p_ignore) < 0.02
    assert abs((inner == WRITE).mean() - (inner == READ).mean()) < 0.02


def test_seeded_and_pure():
    a, b = flipflop.generate(8, 0.8, seed=11), flipflop.generate(8, 0.8, seed=11)
    assert (a == b).all()
    assert (a != flipflop.generate(8, 0.8, seed=12)).any()
    only_ignores = flipflop.generate(4, 1.0, length=8, seed=0)
    assert (only_ignores[:, 0::2] == [[WRITE, IGNORE, IGNORE, READ]] * 4).all()
    assert (only_ignores[:, 1] == only_ignores[:, 7]).all()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="even"):
        flipflop.generate(1, 0.8, length=7, seed=0)
    with pytest.raises(ValueError, match="probability"):
        flipflop.generate(1, 1.5, seed=0)


def test_text_form():
    assert flipflop.to_text([WRITE, ONE, IGNORE, ZERO, READ, ONE]) == "w 1 i 0 r 1"
