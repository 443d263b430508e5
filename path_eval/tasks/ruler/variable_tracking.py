"""RULER `vt`: variable tracking, as NVIDIA/RULER scripts/data/synthetic/variable_tracking.py with
scripts/synthetic.yaml's settings (noise haystack, 1 chain, 4 hops) and its one in-context example.

A chain "VAR A = 12345", "VAR B = VAR A ", ... (trailing space as the original) is scattered over
lines of the noise sentence; the model must name every variable holding the value. The example is
made first, with 3-letter names and the value 12345, as large as fits 500 tokens; each sample puts
a copy of it, names and value redrawn, before its own prompt.

The original draws from Python's global `random` and numpy's global generator, both seeded with
the seed; here they are a `random.Random` and an `np.random.RandomState` made per call, drawn in the
same order, so the same tokenizer gives the original's samples.
"""
from __future__ import annotations

import random
import string
from typing import Callable

import numpy as np

from path_eval.tasks.ruler.common import (RulerSample, Tokenizer, count_tokens, first_fitting, fitted_samples, prompt_counter,
                                          searched_size, unwrapped)
from path_eval.tasks.ruler.templates import NOISE_HAYSTACK, VARIABLE_TRACKING

NUM_HOPS = 4  # synthetic.yaml; one chain
NAME_LETTERS = 5
EXAMPLE_NAME_LETTERS = 3
EXAMPLE_VALUE = "12345"
EXAMPLE_BUDGET = 500  # the example is fitted to 500 tokens with no room for generation
EXAMPLE_STEP = 5
SHORT_LENGTH, SHORT_STEP, STEP = 4096, 5, 10  # noise lines per search/backoff step, below and from 4096

def _name(rng: random.Random, letters: int) -> str:
    return "".join(rng.choices(string.ascii_uppercase, k=letters))


def _chain_names(rng: random.Random, letters: int) -> list[str]:
    """NUM_HOPS + 1 distinct names, drawn as the original (it draws more on a clash, then would
    crash on the extra names: here the first distinct ones are kept)."""
    names = [_name(rng, letters) for _ in range(NUM_HOPS + 1)]
    while len(set(names)) < NUM_HOPS + 1:
        names.append(_name(rng, letters))
    return list(dict.fromkeys(names))[: NUM_HOPS + 1]


def _prompt(size: int, letters: int, rng: random.Random, np_rng: np.random.RandomState,
            example: bool) -> tuple[str, str, list[str]]:
    """(prompt without answer prefix, answer prefix, the chain's names) for `size` noise lines."""
    names = _chain_names(rng, letters)
    value = EXAMPLE_VALUE if example else str(np_rng.randint(10000, 99999))
    statements = [f"VAR {names[0]} = {value}"] + [f"VAR {new} = VAR {old} " for old, new in zip(names, names[1:])]
    lines = [NOISE_HAYSTACK] * size
    for offset, position in enumerate(sorted(rng.sample(range(size), len(statements)))):
        lines.insert(position + offset, statements[offset])
    prompt = VARIABLE_TRACKING.template.format(context="\n".join(lines), query=value)
    return prompt, VARIABLE_TRACKING.answer_prefix.format(num_v=len(names), query=value), names


def draw_chain(size: int, rng: random.Random, np_rng: np.random.RandomState,
               letters: int = NAME_LETTERS) -> tuple[str, str, list[str]]:
    """(prompt, answer prefix, the chain's names) of one chain among `size` noise lines, drawn as the
    task's samples are but with no length search and no in-context example: for training text."""
    return _prompt(size, letters, rng, np_rng, example=False)


def _example(tokenizer: Tokenizer, rng: random.Random, np_rng: np.random.RandomState) -> str:
    """The in-context example: prompt, answer prefix, its names, newline (the original's first pass)."""
    def draw(size: int) -> tuple[str, str, list[str]]:
        return _prompt(size, EXAMPLE_NAME_LETTERS, rng, np_rng, example=True)

    tokens_of = prompt_counter(tokenizer)
    tokens_per_line = tokens_of(draw(EXAMPLE_STEP)) / EXAMPLE_STEP
    upper = max(int((EXAMPLE_BUDGET / tokens_per_line) * 3), EXAMPLE_STEP * 2)
    size = searched_size(lambda size: tokens_of(draw(size)) <= EXAMPLE_BUDGET, EXAMPLE_STEP, upper)
    (prompt, prefix, names), _, _ = first_fitting(draw, tokens_of, size, EXAMPLE_STEP, EXAMPLE_BUDGET)
    return prompt + prefix + " " + " ".join(names) + "\n"


def _redrawn_example(example: str, rng: random.Random, np_rng: np.random.RandomState) -> str:
    """The example with new names and value, replaced textually as the original's `randomize_icl`
    (the names are the last NUM_HOPS + 1 words: the example's answer)."""
    for name in example.split()[-(NUM_HOPS + 1):]:
        example = example.replace(name, _name(rng, len(name)))
    return example.replace(EXAMPLE_VALUE, str(np_rng.randint(10000, 99999)))


def generate_vt(length: int, tokenizer: Tokenizer, seed: int, num_samples: int,
                layout: Callable[[str], str] = unwrapped) -> list[RulerSample]:
    """`num_samples` vt samples whose prompt (laid out by `layout`, example and answer prefix included)
    plus 30 generated tokens fit `length` tokens, the haystack as large as NVIDIA's search makes it.
    The example is made and counted as a base model's (the original strips the model template from
    it) and goes inside the laid-out prompt, before the task's text (where the original inserts it)."""
    rng, np_rng = random.Random(seed), np.random.RandomState(seed)
    budget = length - VARIABLE_TRACKING.tokens_to_generate
    step = SHORT_STEP if length < SHORT_LENGTH else STEP
    example = _example(tokenizer, rng, np_rng)
    example_tokens = count_tokens(tokenizer, example)

    def draw(size: int) -> tuple[str, str, list[str]]:
        return _prompt(size, NAME_LETTERS, rng, np_rng, example=False)

    def laid_out(size: int) -> tuple[str, str, list[str]]:
        prompt, prefix, names = draw(size)
        return layout(prompt), prefix, names

    prompt_tokens = prompt_counter(tokenizer)

    tokens_per_line = prompt_tokens(laid_out(step)) / step
    upper = max(int((length / tokens_per_line) * 3), step * 2)
    size = searched_size(lambda size: prompt_tokens(laid_out(size)) + example_tokens <= budget, step, upper)

    def draw_with_example(size: int) -> tuple[str, str, list[str]]:
        prompt, prefix, names = draw(size)
        return layout(_redrawn_example(example, rng, np_rng) + "\n" + prompt), prefix, names

    return fitted_samples(draw_with_example, prompt_tokens, size, step, budget, num_samples,
                          VARIABLE_TRACKING.tokens_to_generate)
