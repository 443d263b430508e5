"""MQRAR-N's generator against its definition: the N-back labels of 10,000 random sequences
recomputed by a direct left-to-right scan (each key's values in a list; at a key, the N-th most
recent one; the token after a key assigns it), and the layout of MQRAR's law checked on the
sequences themselves."""
import numpy as np
import pytest

from path_eval.metrics.tagging import UNLABELLED
from path_eval.tasks import mqrar

CASES = 10_000


def scanned_labels(sequence, n: int) -> list[int]:
    history: dict[int, list[int]] = {}
    waiting = None
    labels = []
    for token in sequence.tolist():
        label = UNLABELLED
        if token < mqrar.FIRST_VALUE:
            if len(history.get(token, [])) >= n:
                label = history[token][-n]
            waiting = token
        elif waiting is not None:
            history.setdefault(waiting, []).append(token)
            waiting = None
        labels.append(label)
    return labels


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_labels_equal_a_direct_scan(n):
    rng = np.random.default_rng(n)
    checked = 0
    for length, pairs in ((768, 32), (64, 4), (40, 10), (128, 2), (32, 8)):
        count = CASES // 4 // 5 + 1
        sequences, labels = mqrar.generate(count, length, n, pairs, seed=int(rng.integers(2**31)))
        for sequence, label in zip(sequences, labels):
            assert label.tolist() == scanned_labels(sequence, n)
            checked += 1
    assert checked * 4 >= CASES


def test_small_vocabulary_cases_with_many_repeats_equal_the_scan():
    """Keys drawn from few ids repeat often, so long N-back chains occur: the law is patched to a
    small key range for this test alone, the labelling code untouched."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n, length = int(rng.integers(1, 6)), 2 * int(rng.integers(8, 40))
        pairs = int(rng.integers(1, length // 4 + 1))
        sequences = rng.integers(mqrar.FIRST_VALUE, mqrar.VOCAB, size=(8, length))
        sequences[:, 0:length - 1:2] = np.where(rng.random((8, length // 2)) < 0.7,
                                                rng.integers(1, 4, size=(8, length // 2)),
                                                rng.integers(mqrar.FIRST_VALUE, mqrar.VOCAB, size=(8, length // 2)))
        labels = mqrar.n_back_labels(sequences, n)
        for sequence, label in zip(sequences, labels):
            assert label.tolist() == scanned_labels(sequence, n)


def test_layout_follows_mqrars_law():
    pairs, length = 32, 768
    sequences, labels = mqrar.generate(2000, length, 1, pairs, seed=11)
    prefix = sequences[:, :2 * pairs]
    assert ((prefix[:, 0::2] >= 1) & (prefix[:, 0::2] < mqrar.FIRST_VALUE)).all()
    assert ((prefix[:, 1::2] >= mqrar.FIRST_VALUE) & (prefix[:, 1::2] < mqrar.VOCAB)).all()
    region = sequences[:, 2 * pairs:]
    is_query = region < mqrar.FIRST_VALUE
    assert (is_query.sum(1) == pairs).all() and not is_query[:, 1::2].any()  # one query per pair, at slot starts
    for row in range(50):
        assert set(region[row][is_query[row]]) <= set(prefix[row, 0::2])
    slots = np.nonzero(is_query[:, 0::2])[1]
    weights = (np.arange(region.shape[1] // 2) + 1.0) ** (mqrar.POWER_A - 1)
    # Drawn without replacement, 32 of 352 slots: the mean slot lies between the law's own mean and
    # the uniform mean; the median is far below the uniform's, as a power law puts most queries early.
    assert np.median(slots) < 0.35 * (region.shape[1] // 2)
    assert (weights / weights.sum() * np.arange(len(weights))).sum() < slots.mean() < len(weights) / 2
    assert ((labels != UNLABELLED) == (sequences < mqrar.FIRST_VALUE)).sum() > 0


def test_query_slots_follow_numpys_draw_without_replacement():
    """The slots the generator picks against numpy's own `choice(replace=False, p=...)` under MQRAR's
    weights: a two-sample chi-square over ten bins of equal probability under the pooled draws."""
    pairs, length, rows = 32, 768, 3000
    slots = (length - 2 * pairs) // 2
    sequences, _ = mqrar.generate(rows, length, 1, pairs, seed=21)
    ours = np.nonzero(sequences[:, 2 * pairs::2] < mqrar.FIRST_VALUE)[1]
    weights = (np.arange(slots) + 1.0) ** (mqrar.POWER_A - 1)
    rng = np.random.default_rng(22)
    numpys = np.concatenate([rng.choice(slots, pairs, replace=False, p=weights / weights.sum()) for _ in range(rows)])
    edges = np.unique(np.quantile(np.concatenate([ours, numpys]), np.linspace(0, 1, 11)))
    a, b = np.histogram(ours, edges)[0], np.histogram(numpys, edges)[0]
    chi2 = (((a - b) ** 2) / (a + b)).sum()
    assert chi2 < 30  # 9 degrees of freedom: p < 0.001 past 27.9


def test_one_back_labels_every_query_of_an_assigned_key():
    sequences, labels = mqrar.generate(200, 768, 1, seed=2)
    assert ((labels[:, 64:] != UNLABELLED) == (sequences[:, 64:] < mqrar.FIRST_VALUE)).all()


def test_generation_is_a_pure_function_of_its_arguments():
    first, again = mqrar.generate(16, 128, 2, 8, seed=3), mqrar.generate(16, 128, 2, 8, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert not np.array_equal(first[0], mqrar.generate(16, 128, 2, 8, seed=4)[0])


@pytest.mark.parametrize("length, pairs", [(767, 32), (126, 32)])
def test_lengths_that_cannot_hold_the_pairs_and_queries_are_refused(length, pairs):
    with pytest.raises(ValueError, match="at least"):
        mqrar.generate(2, length, 1, pairs, seed=0)


def test_frozen_sequences_are_the_generated_ones(tmp_path):
    path, sequences, labels = mqrar.frozen_sequences("mqrar_2", 2, 8, 64, 9, 12, root=tmp_path)
    expected = mqrar.generate(12, 64, 2, 8, seed=9)
    assert path.is_file() and np.array_equal(sequences, expected[0]) and np.array_equal(labels, expected[1])


def test_vocabulary_names_keys_and_values_by_id():
    assert mqrar.VOCAB_SIZE == mqrar.VOCAB + 2 and len(set(mqrar.SYMBOLS)) == mqrar.VOCAB_SIZE
    assert mqrar.SYMBOLS[1] == "k1" and mqrar.SYMBOLS[mqrar.FIRST_VALUE] == "v0"
    assert mqrar.SYMBOLS[mqrar.VOCAB - 1] == f"v{mqrar.VOCAB - mqrar.FIRST_VALUE - 1}"
