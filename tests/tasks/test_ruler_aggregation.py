"""RULER cwe and fwe against NVIDIA/RULER's definition: scripts/synthetic.yaml (freq_cw 30, freq_ucw 3,
num_cw 10; alpha 2), scripts/data/synthetic/constants.py (templates and answer prefixes, copied here
literally), common_words_extraction.py and freq_words_extraction.py (word sources, repeats, the one
solved cwe example, zeta counts, length fitting), checked by counting words in the prompts with the
real Mistral v1 tokenizer."""
from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from wonderwords.random_word import _get_words_from_text_file

from tests.helpers import tokens
from path_eval.tasks.ruler.aggregation import generate_cwe, generate_fwe

LENGTH = 4096
NUM_SAMPLES = 3
SEED = 3

CWE_HEAD = ("Below is a numbered list of words. In these words, some appear more often than others. "
            "Memorize the ones that appear most often.\n")
CWE_QUESTION = "\nQuestion: What are the 10 most common words in the above list?"
CWE_PREFIX = " Answer: The top 10 words that appear most often in the list are:"
CWE_NEW_TOKENS = 120
FWE_HEAD = ("Read the following coded text and track the frequency of each coded word. "
            "Find the three most frequently appeared coded words. ")
FWE_QUESTION = ("\nQuestion: Do not provide any explanation. Please ignore the dots '....'. "
                "What are the three most frequently appeared words in the above coded text?")
FWE_PREFIX = " Answer: According to the coded text above, the three most frequently appeared words are:"
FWE_NEW_TOKENS = 50


@pytest.fixture(scope="module")
def cwe(tokenizer):
    return generate_cwe(LENGTH, tokenizer, SEED, NUM_SAMPLES)


@pytest.fixture(scope="module")
def fwe(tokenizer):
    return generate_fwe(LENGTH, tokenizer, SEED, NUM_SAMPLES)


def numbered(text: str) -> list[str]:
    """The words of "1. w 2. w ...", checking the numbering runs 1, 2, ... with single spaces."""
    parts = re.split(r"(?:^| )(\d+)\. ", text)
    assert parts[0] == ""
    numbers, words = parts[1::2], parts[2::2]
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)]
    assert all(re.fullmatch(r"\S+", word) for word in words)
    return words


def cwe_parts(text: str) -> tuple[list[str], list[str], list[str]]:
    """(example list, example answer, the question's list) of a cwe prompt."""
    solved, sep, prompt = text.partition("\n" + CWE_HEAD)
    assert sep and solved.startswith(CWE_HEAD) and prompt.endswith(CWE_QUESTION)
    example, sep, answer = solved[len(CWE_HEAD):].partition(CWE_QUESTION + CWE_PREFIX + " ")
    assert sep
    return numbered(example), numbered(answer), numbered(prompt[: -len(CWE_QUESTION)])


def test_cwe_ten_words_thirty_times_the_rest_three_times_after_one_solved_example(cwe):
    vocabulary = set(sum((_get_words_from_text_file(f"{kind}list.txt") for kind in ("noun", "adjective", "verb")), []))
    for sample in cwe:
        example, example_answer, listing = cwe_parts(sample.input)
        assert sample.answer_prefix == CWE_PREFIX and sample.max_new_tokens == CWE_NEW_TOKENS
        counts = Counter(listing)
        assert set(counts) <= vocabulary
        assert sorted(word for word, n in counts.items() if n == 30) == sorted(sample.outputs)
        assert len(sample.outputs) == 10 and all(counts[w] == 3 for w in counts if w not in sample.outputs)
        assert len(counts) == sample.extra["haystack_size"]
        # the example: 40 words, 10 of them 10 times, 30 of them 3 times, answered in its common words
        example_counts = Counter(example)
        assert sorted(example_counts.values()) == [3] * 30 + [10] * 10
        assert sorted(example_answer) == sorted(w for w, n in example_counts.items() if n == 10)
        assert set(example_counts) <= vocabulary


def test_cwe_lists_share_one_arrangement_as_the_original(cwe):
    """The original shuffles every list with a fresh random.Random(seed): equal-sized lists put
    their common words at the same places."""
    patterns = {}
    for sample in cwe:
        _, _, listing = cwe_parts(sample.input)
        patterns.setdefault(len(listing), set()).add(tuple(word in sample.outputs for word in listing))
    assert all(len(p) == 1 for p in patterns.values())


def test_cwe_below_4096_uses_six_and_one_with_a_small_example(tokenizer):
    (sample,) = generate_cwe(2048, tokenizer, SEED, 1)
    example, _, listing = cwe_parts(sample.input)
    assert sorted(Counter(example).values()) == [1] * 10 + [3] * 10
    counts = Counter(listing)
    assert sorted(w for w, n in counts.items() if n == 6) == sorted(sample.outputs)
    assert set(counts.values()) == {1, 6}
    assert sample.length <= 2048


def test_fwe_answer_is_ranks_two_to_four_of_zeta_counts(fwe):
    zeta_2 = math.pi**2 / 6
    vocabulary_size = (LENGTH - FWE_NEW_TOKENS) // 50
    for sample in fwe:
        assert sample.input.startswith(FWE_HEAD) and sample.input.endswith(FWE_QUESTION)
        assert sample.answer_prefix == FWE_PREFIX and sample.max_new_tokens == FWE_NEW_TOKENS
        words = sample.input[len(FWE_HEAD): -len(FWE_QUESTION)].split(" ")
        by_count = Counter(words).most_common()
        assert len(by_count) <= vocabulary_size
        assert by_count[0][0] == "..."
        assert all(re.fullmatch("[a-z]{6}", word) for word, _ in by_count[1:])
        assert [word for word, _ in by_count[1:4]] == sample.outputs
        assert by_count[3][1] > by_count[4][1]  # the top 3 are unambiguous
        # word k appears int(n * k^-2 / zeta(2)) times, n the sample's word count
        n = sample.extra["haystack_size"]
        expected = [int(n / k**2 / zeta_2) for k in range(1, vocabulary_size + 1)]
        assert [count for _, count in by_count] == [c for c in expected if c > 0]


def test_fwe_texts_share_one_arrangement_as_the_original(fwe):
    patterns = {}
    for sample in fwe:
        words = sample.input[len(FWE_HEAD): -len(FWE_QUESTION)].split(" ")
        rank = {word: i for i, (word, _) in enumerate(Counter(words).most_common())}
        patterns.setdefault(len(words), set()).add(tuple(rank[word] for word in words))
    assert all(len(p) == 1 for p in patterns.values())


def test_lengths_fit_the_budget_and_fill_it(cwe, fwe, tokenizer):
    for sample in cwe:
        assert sample.length == tokens(tokenizer, sample.input + sample.answer_prefix) + CWE_NEW_TOKENS
        assert sample.length <= LENGTH
        # the search's word count, or 10 words (30 entries) below it after a long draw
        listing = cwe_parts(sample.input)[2]
        per_entry = tokens(tokenizer, " ".join(f"{i}. {w}" for i, w in enumerate(listing, 1))) / len(listing)
        assert LENGTH - sample.length < 2 * 30 * per_entry * 1.2
    budget = LENGTH - FWE_NEW_TOKENS
    step = budget // 32
    for sample in fwe:
        assert sample.length == tokens(tokenizer, sample.input + sample.answer_prefix) + FWE_NEW_TOKENS
        assert sample.length <= LENGTH
        # the original grows the word count by budget // 32 until the text reaches the budget and
        # steps back once, and once more for a sample whose draw is too long
        words = sample.input[len(FWE_HEAD): -len(FWE_QUESTION)].split(" ")
        per_word = tokens(tokenizer, " ".join(words)) / len(words)
        assert LENGTH - sample.length < 2 * step * per_word * 1.2


def test_same_arguments_same_samples_other_seed_other_samples(cwe, fwe, tokenizer):
    for generate, samples in ((generate_cwe, cwe), (generate_fwe, fwe)):
        again = generate(LENGTH, tokenizer, SEED, NUM_SAMPLES)
        assert [s.to_json() for s in again] == [s.to_json() for s in samples]
        other = generate(LENGTH, tokenizer, SEED + 1, NUM_SAMPLES)
        assert [s.input for s in other] != [s.input for s in samples]
