"""RULER's NIAH tasks against NVIDIA/RULER's definition: scripts/synthetic.yaml (the 8 configurations),
scripts/data/synthetic/constants.py (template and answer prefix, copied here literally) and
scripts/data/synthetic/niah.py (needle, keys, values, depths, haystacks, singular wording, length
fitting), checked by parsing the generated prompts, with the real Mistral v1 tokenizer."""
from __future__ import annotations

import json
import re
from collections import Counter

import punkt
import pytest
from wonderwords.random_word import _get_words_from_text_file

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, load_essays
from path_eval.tasks.ruler.niah import NIAH_TASKS, adjectives_and_nouns, generate_niah, random_needle_part, word_keys
from tests.helpers import FIXTURE_DATA

ESSAYS_DIR = FIXTURE_DATA / ESSAYS_FOLDER  # public-domain texts in the essays' place (tests/fixtures/data)
LENGTH = 4096
NUM_SAMPLES = 3
SEED = 11
NEW_TOKENS = 128  # constants.py: niah tokens_to_generate

# synthetic.yaml: haystack, key type, value type, num_needle_k, num_needle_v, num_needle_q
YAML = {
    "niah_single_1": ("noise", "words", "numbers", 1, 1, 1),
    "niah_single_2": ("essay", "words", "numbers", 1, 1, 1),
    "niah_single_3": ("essay", "words", "uuids", 1, 1, 1),
    "niah_multikey_1": ("essay", "words", "numbers", 4, 1, 1),
    "niah_multikey_2": ("needle", "words", "numbers", 1, 1, 1),
    "niah_multikey_3": ("needle", "uuids", "uuids", 1, 1, 1),
    "niah_multivalue": ("essay", "words", "numbers", 1, 4, 1),
    "niah_multiquery": ("essay", "words", "numbers", 1, 1, 4),
}
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = re.compile(r"One of the special magic (numbers|uuids) for (.+?) is: ([0-9a-f-]+)\.")
VALUE = {"numbers": re.compile(r"[1-9][0-9]{6}"),
         "uuids": re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")}
DEPTHS = [round(100 * i / 39) for i in range(40)]  # np.round(np.linspace(0, 100, 40)); no .5 ties
STEP = {"essay": 500, "noise": 25, "needle": 25}  # niah.py `incremental` at lengths >= 4096


def prompt_parts(value_type: str, singular: bool, query: str) -> tuple[str, str, str]:
    """Head, question and answer prefix: constants.py's strings, made singular as niah.py does."""
    if singular:
        kind = value_type[:-1]
        return (f"A special magic {kind} is hidden within the following text. Make sure to memorize it. "
                f"I will quiz you about the {kind} afterwards.\n",
                f"\nWhat is the special magic {kind} for {query} mentioned in the provided text?",
                f" The special magic {kind} for {query} mentioned in the provided text is")
    return (f"Some special magic {value_type} are hidden within the following text. Make sure to memorize it. "
            f"I will quiz you about the {value_type} afterwards.\n",
            f"\nWhat are all the special magic {value_type} for {query} mentioned in the provided text?",
            f" The special magic {value_type} for {query} mentioned in the provided text are")


def is_word_key(key: str) -> bool:
    adjectives, nouns = map(set, adjectives_and_nouns())
    return any(key[:cut] in adjectives and key[cut + 1 :] in nouns for cut in range(len(key)) if key[cut] == "-")


@pytest.fixture(scope="module")
def essays() -> str:
    return load_essays(ESSAYS_DIR)


@pytest.fixture(scope="module")
def generated(tokenizer, essays):
    return {task: generate_niah(task, LENGTH, tokenizer, SEED, NUM_SAMPLES, essays) for task in YAML}


def test_configurations_are_synthetic_yaml():
    assert list(NIAH_TASKS) == list(YAML)
    for task, (haystack, key_type, value_type, keys, values, queries) in YAML.items():
        config = NIAH_TASKS[task]
        assert (config.haystack, config.key_type, config.value_type) == (haystack, key_type, value_type)
        assert (config.num_keys, config.num_values, config.num_queries) == (keys, values, queries)


@pytest.mark.parametrize("task", list(YAML))
def test_prompt_structure(task, generated, essays):
    haystack, key_type, value_type, num_keys, num_values, num_queries = YAML[task]
    inserted_keys = max(num_keys, num_queries)  # niah.py: num_needle_k = max(k, q)
    for sample in generated[task]:
        question = re.search(r"\nWhat (?:is|are all) the special magic \w+ for (.+) mentioned in the provided text\?$",
                             sample.input)
        query = question.group(1)
        queries = query.split(", and ")[0].split(", ") + query.split(", and ")[1:]
        assert len(queries) == num_queries and queries == sample.extra["queries"]
        head, tail, prefix = prompt_parts(value_type, num_queries * num_values == 1, query)
        assert sample.input.startswith(head) and sample.input.endswith(tail)
        assert sample.answer_prefix == prefix
        context = sample.input[len(head) : -len(tail)]

        needles = [(m.group(2), m.group(3), m.group(0)) for m in NEEDLE.finditer(context)]
        assert all(m.group(1) == value_type for m in NEEDLE.finditer(context))
        assert all(VALUE[value_type].fullmatch(value) for _, value, _ in needles)
        assert all(is_word_key(key) if key_type == "words" else VALUE[key_type].fullmatch(key) for key, _, _ in needles)
        by_key = Counter(key for key, _, _ in needles)
        assert all(by_key[key] == num_values for key in queries)
        # the references are exactly the values the queried keys' needles give
        assert Counter(sample.outputs) == Counter(value for key, value, _ in needles if key in queries)
        assert len(sample.outputs) == num_queries * num_values
        assert sample.max_new_tokens == NEW_TOKENS

        size = sample.extra["haystack_size"]
        if haystack == "needle":
            lines = context.split("\n")
            assert len(lines) == size + 1 and all(NEEDLE.fullmatch(line) for line in lines)
            assert len(by_key) == size + 1  # distractors: each its own random key
            continue
        assert len(needles) == inserted_keys * num_values and len(by_key) == inserted_keys
        if haystack == "noise":
            lines = context.split("\n")
            assert len(lines) == size + len(needles)
            assert [line for line in lines if not NEEDLE.fullmatch(line)] == [NOISE] * size
        else:
            check_essay_context(context, [needle for _, _, needle in needles], essays, size)


def check_essay_context(context: str, needles: list[str], essays: str, size: int) -> None:
    """Needles sit between the sentences of the first `size` essay words, at RULER's depths."""
    words = re.sub(r"\s+", " ", essays).split(" ")[:size]
    haystack = " ".join(words)
    without_needles = re.sub("|".join(map(re.escape, needles)), "", context)
    # the same words in the same order (RULER rejoins sentences with a space, so a split inside
    # "good.[2]" gains one)
    assert re.sub(r"\s", "", without_needles) == re.sub(r"\s", "", haystack)
    sentences = punkt.sent_tokenize(haystack)
    prefixes = {" ".join(sentences[:count]): count for count in range(len(sentences) + 1)}
    allowed = {int(len(sentences) * (depth / 100)) for depth in DEPTHS}
    for needle in needles:
        before = context[: context.index(needle)]
        for other in needles:
            before = before.replace(other, "")
        before = re.sub(" +", " ", before).strip()
        assert before in prefixes, "needle inside a sentence"
        assert prefixes[before] in allowed


@pytest.mark.parametrize("task", list(YAML))
def test_token_budget(task, generated, tokenizer, essays):
    haystack = YAML[task][0]
    for sample in generated[task]:
        tokens = len(tokenizer.encode(sample.input + sample.answer_prefix, add_special_tokens=False))
        assert sample.length == tokens + NEW_TOKENS <= LENGTH
        if haystack == "essay":
            step_text = " ".join(re.sub(r"\s+", " ", essays).split(" ")[:STEP["essay"]])
        elif haystack == "noise":
            step_text = "\n".join([NOISE] * STEP["noise"])
        else:
            step_text = "\n".join(sample.input.split("\n")[1 : 1 + STEP["needle"]])
        step_tokens = len(tokenizer.encode(step_text, add_special_tokens=False))
        # within one haystack step (plus some draw-to-draw variation) of the budget
        assert LENGTH - sample.length <= 1.2 * step_tokens + 32, (sample.length, step_tokens)


def test_short_lengths_use_small_steps(tokenizer):
    samples = generate_niah("niah_single_1", 1024, tokenizer, SEED, 2, None)
    assert all(1024 - 6 * 25 < sample.length <= 1024 for sample in samples)  # steps of 5 noise lines below 4096


def test_deterministic_and_seed_dependent(tokenizer, essays):
    for task in ("niah_multikey_1", "niah_multikey_3"):
        first = [json.dumps(s.to_json()) for s in generate_niah(task, 2048, tokenizer, 5, 2, essays)]
        again = [json.dumps(s.to_json()) for s in generate_niah(task, 2048, tokenizer, 5, 2, essays)]
        other = [json.dumps(s.to_json()) for s in generate_niah(task, 2048, tokenizer, 6, 2, essays)]
        assert first == again
        assert first != other


def test_errors(tokenizer):
    with pytest.raises(KeyError, match="niah_single_1"):
        generate_niah("niah_single_4", LENGTH, tokenizer, 0, 1, None)
    with pytest.raises(PathEvalError, match="python eval.py download --suite ruler"):
        generate_niah("niah_single_2", LENGTH, tokenizer, 0, 1, None)
    with pytest.raises(PathEvalError, match="longer length"):
        generate_niah("niah_single_1", 200, tokenizer, 0, 1, None)


def test_word_lists_are_wonderwords_and_pairs_never_collide():
    adjectives, nouns = adjectives_and_nouns()
    assert adjectives == tuple(sorted(set(_get_words_from_text_file("adjectivelist.txt"))))
    assert nouns == tuple(sorted(set(_get_words_from_text_file("nounlist.txt"))))
    # adj1-noun1 == adj2-noun2 with adj1 != adj2 needs adj2 == adj1 + "-" + x and noun1 == x + "-" + noun2
    noun_set = set(nouns)
    collisions = [
        (short, long)
        for short in adjectives for long in adjectives if long.startswith(short + "-")
        for noun in nouns
        if noun.startswith(long[len(short) + 1 :] + "-") and noun[len(long) - len(short) :] in noun_set
    ]
    assert collisions == []


def test_word_keys_are_ruler_sorted_list_index_for_index():
    """RULER draws `random.choice(sorted(set(adj-noun strings)))`: our index -> key must be that list's,
    also where adjectives sharing a prefix interleave ("blue-eyed-ant" among "blue-e..." nouns)."""
    import random

    adjectives, nouns = adjectives_and_nouns()
    full = sorted({f"{a}-{n}" for a in adjectives for n in nouns})
    keys = word_keys()
    assert len(keys) == len(full)
    rng = random.Random(1)
    checked = [rng.randrange(len(full)) for _ in range(20000)]
    for stem in ("blue", "high", "old", "teeny", "wide"):  # the interleaving groups, every index
        first = next(i for i, word in enumerate(full) if word.startswith(stem + "-"))
        checked += range(first - 5, first + 3 * len(nouns))
    assert [keys[i] for i in checked] == [full[i] for i in checked]


def test_random_parts_have_ruler_shapes():
    import random

    rng = random.Random(0)
    numbers = [random_needle_part("numbers", rng) for _ in range(2000)]
    assert all(VALUE["numbers"].fullmatch(n) for n in numbers) and len(set(numbers)) > 1990
    assert all(VALUE["uuids"].fullmatch(random_needle_part("uuids", rng)) for _ in range(200))
    words = [random_needle_part("words", rng) for _ in range(200)]
    assert all(is_word_key(word) for word in words) and len(set(words)) == 200
