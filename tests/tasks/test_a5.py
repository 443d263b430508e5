"""The A5 word problem's generator against its definition: the group from sympy's AlternatingGroup(5)
(an independent construction), the labels of 10,000 random words recomputed by composing the
permutations one letter at a time, as maps on 0..4, and the worked example of the original's
library (jopetty/word-problem: word [5, 17, 33] -> labels [5, 34, 19])."""
import numpy as np
import pytest
from sympy.combinatorics import Permutation
from sympy.combinatorics.named_groups import AlternatingGroup

from path_eval.metrics.tagging import UNLABELLED
from path_eval.tasks import a5

CASES = 10_000


def compose(outer: tuple, inner: tuple) -> tuple:
    """outer . inner as maps: x -> outer(inner(x)) (one-line notation)."""
    return tuple(outer[inner[x]] for x in range(5))


def brute_force_products(word) -> list[tuple]:
    """p_t = p_(t-1) . g_t from the identity."""
    product, products = tuple(range(5)), []
    for letter in word:
        product = compose(product, a5.ELEMENTS[letter])
        products.append(product)
    return products


def letters_and_labels(inputs, labels):
    """The letters after BOS and their labels; BOS itself is unlabelled."""
    assert (inputs[:, 0] == a5.BOS).all() and (labels[:, 0] == UNLABELLED).all()
    return inputs[:, 1:], labels[:, 1:]


def test_the_elements_are_sympys_alternating_group_in_lexicographic_order():
    group = {tuple(p.array_form) for p in AlternatingGroup(5).elements}
    assert len(a5.ELEMENTS) == 60 and set(a5.ELEMENTS) == group
    assert list(a5.ELEMENTS) == sorted(a5.ELEMENTS) and a5.ELEMENTS[a5.IDENTITY] == (0, 1, 2, 3, 4)


def test_the_multiplication_table_is_sympys_product_in_the_originals_order():
    """sympy's p * q applies p first; the original's a . b applies b first: a . b = sympy's b * a."""
    for a in range(60):
        for b in range(60):
            expected = (Permutation(list(a5.ELEMENTS[b])) * Permutation(list(a5.ELEMENTS[a]))).array_form
            assert a5.ELEMENTS[a5.MULTIPLY[a, b]] == tuple(expected)


def test_the_originals_worked_example():
    assert a5.prefix_products(np.array([[5, 17, 33]])).tolist() == [[5, 34, 19]]


def test_generators_are_the_papers_three_cycles_and_inverses():
    """(1 2 3), (1 2 4), (1 2 5) on points 1..5 are sympy's cycles (0 1 2), (0 1 3), (0 1 4) on 0..4."""
    cycles = [Permutation([[0, 1, 2]], size=5), Permutation([[0, 1, 3]], size=5), Permutation([[0, 1, 4]], size=5)]
    expected = [tuple(c.array_form) for c in cycles] + [tuple((~c).array_form) for c in cycles]
    assert [a5.ELEMENTS[g] for g in a5.GENERATORS] == expected


def test_product_labels_equal_brute_force_on_10000_random_words():
    rng = np.random.default_rng(0)
    checked = 0
    for length in (1, 2, 3, 5, 8, 13, 20, 32, 64):
        count = CASES // 9 + 1
        words, labels = letters_and_labels(*a5.generate(count, length, seed=int(rng.integers(2**31))))
        assert words.shape == labels.shape == (count, length) and words.min() >= 0 and words.max() < 60
        for word, label in zip(words, labels):
            assert [a5.ELEMENTS[g] for g in label] == brute_force_products(word)
            checked += 1
    assert checked >= CASES


def test_identity_labels_equal_brute_force_and_answers_are_balanced():
    rng = np.random.default_rng(1)
    checked = 0
    for length in (2, 3, 4, 7, 12, 20):
        count = CASES // 6 + 1
        words, labels = letters_and_labels(*a5.generate(count, length, "identity", seed=int(rng.integers(2**31))))
        assert set(np.unique(words)) <= set(a5.GENERATORS)
        for word, label in zip(words, labels):
            expected = [a5.YES if p == (0, 1, 2, 3, 4) else a5.NO for p in brute_force_products(word)]
            assert label.tolist() == expected
            checked += 1
        assert (labels[:, -1] == a5.YES).sum() == (count + 1) // 2
    assert checked >= CASES


def test_product_words_are_uniform():
    """Each of the 60 letters about 1/60 of the time (a chi-square bound far past chance)."""
    words = a5.generate(6000, 20, seed=3)[0][:, 1:]
    counts = np.bincount(words.ravel(), minlength=60)
    expected = words.size / 60
    assert ((counts - expected) ** 2 / expected).sum() < 120  # chi-square, 59 degrees of freedom: p < 1e-5


def test_generation_is_a_pure_function_of_its_arguments():
    for form in ("product", "identity"):
        first, again = a5.generate(64, 10, form, seed=7), a5.generate(64, 10, form, seed=7)
        assert all(np.array_equal(x, y) for x, y in zip(first, again))
        assert not np.array_equal(first[0], a5.generate(64, 10, form, seed=8)[0])


@pytest.mark.parametrize("form, length", [("product", 0), ("identity", 1)])
def test_too_short_words_are_refused(form, length):
    with pytest.raises(ValueError, match="at least"):
        a5.generate(4, length, form, seed=0)


def test_frozen_words_are_the_generated_ones(tmp_path):
    path, words, labels = a5.frozen_words("a5_product", "product", 12, 5, 16, root=tmp_path)
    expected = a5.generate(16, 12, seed=5)
    assert path.is_file() and np.array_equal(words, expected[0]) and np.array_equal(labels, expected[1])
    assert a5.frozen_words("a5_product", "product", 12, 5, 16, root=tmp_path)[0] == path


def test_vocabulary_names_every_element_in_one_line_notation():
    assert a5.SYMBOLS[:60] == tuple("".join(map(str, e)) for e in a5.ELEMENTS)
    assert a5.SYMBOLS[a5.NO] == "no" and a5.SYMBOLS[a5.YES] == "yes" and len(set(a5.SYMBOLS)) == a5.VOCAB_SIZE
