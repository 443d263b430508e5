"""RULER vt against NVIDIA/RULER's definition: scripts/synthetic.yaml (noise haystack, 1 chain, 4 hops),
scripts/data/synthetic/constants.py (template and answer prefix, copied here literally) and
variable_tracking.py (chains, names, values, the in-context example fitted to 500 tokens, length
fitting), checked by parsing the prompts, with the real Mistral v1 tokenizer."""
from __future__ import annotations

import re

import pytest

from tests.helpers import tokens
from path_eval.tasks.ruler.variable_tracking import generate_vt

LENGTH = 4096
NUM_SAMPLES = 3
SEED = 5
NEW_TOKENS = 30  # constants.py: variable_tracking tokens_to_generate
HOPS = 4
STEP = 10  # variable_tracking.py `incremental` for the noise haystack at lengths >= 4096
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
HEAD = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
QUESTION = "\nQuestion: Find all variables that are assigned the value {value} in the text above."
PREFIX = (" Answer: According to the chain(s) of variable assignment in the text above, "
          "5 variables are assigned the value {value}, they are: ")
PROMPT = re.compile(
    re.escape(HEAD) + r"(?P<context>.*)" + re.escape(QUESTION.format(value="@")).replace("@", r"(?P<value>\d+)"),
    re.DOTALL)


@pytest.fixture(scope="module")
def samples(tokenizer):
    return generate_vt(LENGTH, tokenizer, SEED, NUM_SAMPLES)


def chain(context: str, letters: int) -> tuple[list[str], str, int]:
    """(names in chain order, the value, noise lines) of a context that must hold exactly one chain
    of HOPS hops between noise lines."""
    lines = context.split("\n")
    statements = [line for line in lines if line != NOISE]
    name = f"[A-Z]{{{letters}}}"
    first = re.fullmatch(rf"VAR ({name}) = (\d{{5}})", statements[0])
    assert first, statements[0]
    names, value = [first.group(1)], first.group(2)
    assert len(statements) == HOPS + 1
    for statement in statements[1:]:
        hop = re.fullmatch(rf"VAR ({name}) = VAR {names[-1]} ", statement)  # trailing space as the original
        assert hop, statement
        names.append(hop.group(1))
    assert len(set(names)) == HOPS + 1
    return names, value, len(lines) - len(statements)


def split_example(text: str) -> tuple[str, str]:
    """(the in-context example with its answer, the question's prompt): the original ends the
    example with a newline and joins it to the prompt with another."""
    assert text.startswith(HEAD) and text.count(HEAD) == 2
    cut = text.index(HEAD, 1)
    assert text[cut - 2 : cut] == "\n\n"
    return text[: cut - 2], text[cut:]


def test_prompt_is_the_template_around_one_four_hop_chain(samples):
    for sample in samples:
        _, prompt = split_example(sample.input)
        match = PROMPT.fullmatch(prompt)
        assert match
        names, value, noise_lines = chain(match.group("context"), letters=5)
        assert match.group("value") == value and 10000 <= int(value) <= 99998
        assert sample.outputs == names
        assert sample.answer_prefix == PREFIX.format(value=value)
        assert sample.max_new_tokens == NEW_TOKENS
        assert noise_lines == sample.extra["haystack_size"]


def test_in_context_example_is_a_solved_three_letter_chain_fitted_to_500_tokens(samples, tokenizer):
    shapes = set()
    for sample in samples:
        example, _ = split_example(sample.input)
        cut = example.rindex(" Answer: According")
        match = PROMPT.fullmatch(example[:cut])
        assert match
        names, value, _ = chain(match.group("context"), letters=3)
        assert match.group("value") == value
        # the original appends " " + the answer to the prompt ending in "they are: "
        assert example[cut:] == PREFIX.format(value=value) + " " + " ".join(names)
        # fitted with no room for generation: <= 500 tokens, and 5 more noise lines would not fit
        # (names and value are redrawn per sample, which moves the count by a few tokens)
        example_tokens = tokens(tokenizer, example[:cut] + PREFIX.format(value=value))
        assert example_tokens <= 500 + 10
        assert example_tokens + 5 * tokens(tokenizer, NOISE) > 500 - 10
        shapes.add(tuple(line == NOISE for line in match.group("context").split("\n")))
    # one example, the same lines in every sample: only its names and value are redrawn
    assert len(shapes) == 1
    assert len({split_example(s.input)[0] for s in samples}) == NUM_SAMPLES


def test_length_fits_the_budget_and_fills_it(samples, tokenizer):
    noise_tokens = tokens(tokenizer, NOISE)
    for sample in samples:
        assert sample.length == tokens(tokenizer, sample.input + sample.answer_prefix) + NEW_TOKENS
        assert sample.length <= LENGTH
        # the search's size, or one step below it after an unlucky draw
        assert LENGTH - sample.length < 2 * STEP * (noise_tokens + 1)


def test_same_arguments_same_samples_other_seed_other_samples(samples, tokenizer):
    again = generate_vt(LENGTH, tokenizer, SEED, NUM_SAMPLES)
    assert [s.to_json() for s in again] == [s.to_json() for s in samples]
    other = generate_vt(LENGTH, tokenizer, SEED + 1, NUM_SAMPLES)
    assert [s.input for s in other] != [s.input for s in samples]
