"""RULER's aggregation tasks, as NVIDIA/RULER scripts/data/synthetic/common_words_extraction.py
(`cwe`) and freq_words_extraction.py (`fwe`) with scripts/synthetic.yaml's settings.

cwe: a numbered list ("1. word 2. word ...", one line) where 10 words appear 30 times and the rest
3 times, after one solved example of 40 words (10 x 10 and 30 x 3). Below 4096 tokens the original
switches to 6 vs 1 and a 20-word example (3 vs 1); that is kept. Words come from wonderwords'
noun, adjective and verb lists (deduplicated, sorted, shuffled with the seed).

fwe: coded 6-letter words with counts int(n * k^-2 / zeta(2)) by rank k; rank 1 is the noise word
"...", the answer is ranks 2-4. No example. The word count n is found once by growing it in steps
of budget/32 until the text reaches the budget, then each sample steps it down while it exceeds it.

Both originals shuffle each list with a fresh `random.Random(seed)` (so every sample of a length
has the same arrangement, only the words differ) and draw everything else from the global
`random` seeded with the seed; here that is one `random.Random(seed)` per call, drawn in the same
order, so the same tokenizer gives the original's samples.
"""
from __future__ import annotations

import functools
import importlib.resources
import math
import random
import string
from typing import Callable

import numpy as np

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.common import (RulerSample, Tokenizer, count_tokens, fitted_samples, prompt_counter,
                                          searched_size, unwrapped)
from path_eval.tasks.ruler.templates import COMMON_WORDS_EXTRACTION, FREQ_WORDS_EXTRACTION

COMMON_WORDS = 10
COMMON_REPEATS, UNCOMMON_REPEATS = 30, 3
EXAMPLE_WORDS, EXAMPLE_COMMON_REPEATS, EXAMPLE_UNCOMMON_REPEATS = 40, 10, 3
SHORT_LENGTH = 4096  # below it: 6 vs 1, and a 20-word example with 3 vs 1
SHORT_COMMON_REPEATS, SHORT_UNCOMMON_REPEATS = 6, 1
SHORT_EXAMPLE_WORDS, SHORT_EXAMPLE_COMMON_REPEATS, SHORT_EXAMPLE_UNCOMMON_REPEATS = 20, 3, 1
CWE_STEP = 10
CWE_PROBE_WORDS = 4096  # the original estimates tokens per word from one draw of this size

ZETA_ALPHA = 2.0
ZETA_OF_ALPHA = math.pi**2 / 6  # zeta(2), equal to scipy.special.zeta(2.0) to the last bit
CODED_WORD_LETTERS = 6
NOISE_WORD = "..."
BUDGET_PER_VOCABULARY_WORD = 50  # vocabulary size = budget // 50
STEPS_PER_BUDGET = 32  # word-count step = budget // 32


@functools.cache
def _wonderwords_sorted() -> tuple[str, ...]:
    """wonderwords' nouns, adjectives and verbs (lines right-stripped), deduplicated and sorted."""
    assets = importlib.resources.files("wonderwords.assets")
    words: set[str] = set()
    for name in ("nounlist.txt", "adjectivelist.txt", "verblist.txt"):
        with assets.joinpath(name).open("r", encoding="utf-8") as lines:
            words.update(line.rstrip() for line in lines)
    return tuple(sorted(words))


def _numbered(words: list[str]) -> str:
    return " ".join(f"{i + 1}. {word}" for i, word in enumerate(words))


def _word_list(words: list[str], count: int, common_repeats: int, uncommon_repeats: int, rng: random.Random,
               seed: int) -> tuple[str, list[str]]:
    """(numbered list, its COMMON_WORDS common words) of `count` distinct words."""
    if count > len(words):
        raise PathEvalError(f"cwe needs {count} distinct words but wonderwords has {len(words)}: the original "
                            "then draws from RULER's english_words.json, which is not shipped; choose a shorter length")
    chosen = rng.sample(words, count)
    common = chosen[:COMMON_WORDS]
    listing = common * common_repeats + chosen[COMMON_WORDS:] * uncommon_repeats
    random.Random(seed).shuffle(listing)
    return _numbered(listing), common


def _cwe_prompt(count: int, length: int, words: list[str], rng: random.Random, seed: int,
                layout: Callable[[str], str]) -> tuple[str, str, list[str]]:
    """(solved example + newline + prompt, answer prefix, the common words) for a `count`-word list.
    Example and prompt are each laid out by `layout` (the original formats both with the whole
    template, model template included: under a chat template the example is a turn of its own)."""
    if length < SHORT_LENGTH:
        example = _word_list(words, SHORT_EXAMPLE_WORDS, SHORT_EXAMPLE_COMMON_REPEATS, SHORT_EXAMPLE_UNCOMMON_REPEATS,
                             rng, seed)
        context, common = _word_list(words, count, SHORT_COMMON_REPEATS, SHORT_UNCOMMON_REPEATS, rng, seed)
    else:
        example = _word_list(words, EXAMPLE_WORDS, EXAMPLE_COMMON_REPEATS, EXAMPLE_UNCOMMON_REPEATS, rng, seed)
        context, common = _word_list(words, count, COMMON_REPEATS, UNCOMMON_REPEATS, rng, seed)
    template, prefix = COMMON_WORDS_EXTRACTION.template, COMMON_WORDS_EXTRACTION.answer_prefix
    solved = layout(template.format(context=example[0])) + prefix + " " + _numbered(example[1])
    prompt = solved + "\n" + layout(template.format(context=context))
    return prompt, COMMON_WORDS_EXTRACTION.answer_prefix, common


def generate_cwe(length: int, tokenizer: Tokenizer, seed: int, num_samples: int,
                 layout: Callable[[str], str] = unwrapped) -> list[RulerSample]:
    """`num_samples` cwe samples whose prompt (laid out by `layout`, answer prefix included) plus 120
    generated tokens fit `length` tokens, the list as long as NVIDIA's search makes it."""
    rng = random.Random(seed)
    words = list(_wonderwords_sorted())
    random.Random(seed).shuffle(words)
    budget = length - COMMON_WORDS_EXTRACTION.tokens_to_generate

    def draw(count: int) -> tuple[str, str, list[str]]:
        return _cwe_prompt(count, length, words, rng, seed, layout)

    prompt_tokens = prompt_counter(tokenizer)
    tokens_per_word = prompt_tokens(draw(CWE_PROBE_WORDS)) / CWE_PROBE_WORDS
    upper = max(int(length // tokens_per_word) * 2, CWE_STEP * 2)
    size = searched_size(lambda count: prompt_tokens(draw(count)) <= budget, CWE_STEP, upper)
    return fitted_samples(draw, prompt_tokens, size, CWE_STEP, budget, num_samples,
                          COMMON_WORDS_EXTRACTION.tokens_to_generate)


def _coded_vocabulary(size: int, rng: random.Random, seed: int) -> list[str]:
    """`size` distinct random lowercase words by rank, rank 1 replaced by the noise word."""
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=CODED_WORD_LETTERS)) for _ in range(size)]
    while len(set(vocabulary)) < size:
        vocabulary.append("".join(rng.choices(string.ascii_lowercase, k=CODED_WORD_LETTERS)))
    vocabulary = sorted(set(vocabulary))
    random.Random(seed).shuffle(vocabulary)
    vocabulary[0] = NOISE_WORD
    return vocabulary


def _zeta_counts(num_words: int, vocabulary_size: int) -> np.ndarray:
    """Occurrences of the words of rank 1..vocabulary_size: int(num_words * k^-alpha / zeta(alpha)),
    computed in the original's float64 order."""
    ranks = np.arange(1, vocabulary_size + 1)
    return (num_words * (ranks**-ZETA_ALPHA) / ZETA_OF_ALPHA).astype(int)


def _coded_prompt(num_words: int, vocabulary: list[str], seed: int, layout: Callable[[str], str]) -> str:
    """Prompt laid out by `layout`, with answer prefix (the original formats and counts them together)."""
    text = [word for word, count in zip(vocabulary, _zeta_counts(num_words, len(vocabulary))) for _ in range(count)]
    random.Random(seed).shuffle(text)
    return layout(FREQ_WORDS_EXTRACTION.template.format(context=" ".join(text))) + FREQ_WORDS_EXTRACTION.answer_prefix


def generate_fwe(length: int, tokenizer: Tokenizer, seed: int, num_samples: int,
                 layout: Callable[[str], str] = unwrapped) -> list[RulerSample]:
    """`num_samples` fwe samples whose prompt (laid out by `layout`, answer prefix included) plus 50
    generated tokens fit `length` tokens."""
    rng = random.Random(seed)
    budget = length - FREQ_WORDS_EXTRACTION.tokens_to_generate
    vocabulary_size = budget // BUDGET_PER_VOCABULARY_WORD
    step = budget // STEPS_PER_BUDGET
    if vocabulary_size < 4 or step < 1:
        raise PathEvalError(f"fwe cannot be built for {length} tokens: choose a longer length")

    # the word count: grown from budget // 6 until the text reaches the budget, then one step back
    vocabulary = _coded_vocabulary(vocabulary_size, rng, seed)
    num_words = budget // CODED_WORD_LETTERS
    while count_tokens(tokenizer, _coded_prompt(num_words, vocabulary, seed, layout)) < budget:
        num_words += step
    num_words -= step

    samples = []
    prefix = FREQ_WORDS_EXTRACTION.answer_prefix
    for index in range(num_samples):  # each with a new vocabulary, stepped down while too long
        vocabulary = _coded_vocabulary(vocabulary_size, rng, seed)
        used = num_words
        prompt = _coded_prompt(used, vocabulary, seed, layout)
        tokens = count_tokens(tokenizer, prompt)
        while tokens > budget:
            used -= step
            if used <= 0:
                raise PathEvalError(f"fwe cannot fit {length} tokens: choose a longer length")
            prompt = _coded_prompt(used, vocabulary, seed, layout)
            tokens = count_tokens(tokenizer, prompt)
        samples.append(RulerSample(index=index, input=prompt[: -len(prefix)], outputs=vocabulary[1:4],
                                   answer_prefix=prefix, max_new_tokens=FREQ_WORDS_EXTRACTION.tokens_to_generate,
                                   length=tokens + FREQ_WORDS_EXTRACTION.tokens_to_generate,
                                   extra={"haystack_size": used}))
    return samples
