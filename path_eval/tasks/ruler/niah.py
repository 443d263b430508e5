"""RULER's 8 needle-in-a-haystack tasks, generated as NVIDIA/RULER scripts/data/synthetic/niah.py
does with the configurations of scripts/synthetic.yaml, from our own seeded generator.

A sample: needles "One of the special magic {values} for {key} is: {value}." hidden in a haystack
(the noise sentence repeated, the essays, or distractor needles), then a question about one or more
of the inserted keys; the references are the values of the queried keys. The haystack size (noise
sentences, distractor needles or essay words) is the largest for which the prompt with its answer
prefix plus the 128 generated tokens fits the length, found by binary search over real samples and
then reduced per sample, in RULER's steps, while a sample overshoots.

Where NVIDIA draws from the global `random` module, we draw from one `random.Random(seed)` in the
same order (search probes, then samples one after another, a retried sample drawing anew), so the
samples are the same on every machine and for any task order.
"""
from __future__ import annotations

import bisect
import random
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable
from importlib.resources import files

import numpy as np

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.common import RulerSample, Tokenizer, count_tokens, first_fitting, searched_size, unwrapped
from path_eval.tasks.ruler.haystack import MISSING_ESSAYS_FIX, EssayHaystack
from path_eval.tasks.ruler.templates import NIAH, NIAH_NEEDLE, NOISE_HAYSTACK

NEEDLE_TYPES = ("words", "numbers", "uuids")


@dataclass(frozen=True)
class NiahConfig:
    """One NIAH task as NVIDIA/RULER scripts/synthetic.yaml states it (its `args`)."""

    haystack: str  # "noise", "essay" or "needle" (a haystack of distractor needles)
    key_type: str  # "words" (adjective-noun), "numbers" (7 digits) or "uuids"
    value_type: str
    num_keys: int = 1
    num_values: int = 1  # values per key
    num_queries: int = 1

    @property
    def keys_inserted(self) -> int:
        """RULER inserts at least as many keys as it queries (num_needle_k = max(k, q))."""
        return max(self.num_keys, self.num_queries)

    @property
    def singular(self) -> bool:
        """One reference: RULER words the prompt in the singular."""
        return self.num_queries * self.num_values == 1


NIAH_TASKS: dict[str, NiahConfig] = {
    "niah_single_1": NiahConfig("noise", "words", "numbers"),
    "niah_single_2": NiahConfig("essay", "words", "numbers"),
    "niah_single_3": NiahConfig("essay", "words", "uuids"),
    "niah_multikey_1": NiahConfig("essay", "words", "numbers", num_keys=4),
    "niah_multikey_2": NiahConfig("needle", "words", "numbers"),
    "niah_multikey_3": NiahConfig("needle", "uuids", "uuids"),
    "niah_multivalue": NiahConfig("essay", "words", "numbers", num_values=4),
    "niah_multiquery": NiahConfig("essay", "words", "numbers", num_queries=4),
}

# Needle depths in percent of the essay's sentences: 40 evenly spaced, rounded (RULER's DEPTHS).
DEPTHS: list[int] = [int(depth) for depth in np.round(np.linspace(0, 100, num=40, endpoint=True))]

# Singular wording, applied in this order to template and answer prefix (RULER niah.py).
SINGULAR_REPLACEMENTS = (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer"))


@lru_cache(maxsize=1)
def adjectives_and_nouns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """wonderwords' adjective and noun lists (its asset files), each deduplicated and sorted."""
    def word_list(name: str) -> tuple[str, ...]:
        lines = (files("wonderwords") / "assets" / name).read_text(encoding="utf-8").splitlines()
        return tuple(sorted({line.rstrip() for line in lines}))

    return word_list("adjectivelist.txt"), word_list("nounlist.txt")


class WordKeys:
    """RULER's word keys: `sorted(set(f"{adjective}-{noun}"))` over wonderwords' lists, indexed as
    `random.choice` indexes that list, without building its 6.2 million strings. Adjectives sharing a
    prefix ("blue", "blue-eyed", "bluer") form a group whose strings can interleave ("blue-eyed-ant"
    sorts among "blue-e..." nouns): a group's strings are sorted explicitly; a lone adjective's are
    itself + "-" + each sorted noun. Groups follow one another in the order of their first adjective."""

    def __init__(self, adjectives: tuple[str, ...], nouns: tuple[str, ...]):
        self.nouns = nouns
        self.groups: list[tuple[str, ...]] = []
        for adjective in adjectives:  # sorted: the words starting with a prefix follow it directly
            if self.groups and adjective.startswith(self.groups[-1][0]):
                self.groups[-1] += (adjective,)
            else:
                self.groups.append((adjective,))
        self.sorted_groups = {g: sorted({f"{a}-{n}" for a in g for n in nouns}) for g in self.groups if len(g) > 1}
        sizes = [len(self.sorted_groups.get(g, ())) or len(nouns) for g in self.groups]
        self.starts = [0]
        for size in sizes:
            self.starts.append(self.starts[-1] + size)

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, index: int) -> str:
        group = bisect.bisect_right(self.starts, index) - 1
        offset = index - self.starts[group]
        members = self.groups[group]
        if len(members) > 1:
            return self.sorted_groups[members][offset]
        return f"{members[0]}-{self.nouns[offset]}"


@lru_cache(maxsize=1)
def word_keys() -> WordKeys:
    return WordKeys(*adjectives_and_nouns())


def random_needle_part(kind: str, rng: random.Random) -> str:
    """A key or value: an adjective-noun word, a 7-digit number, or a uuid4-shaped string."""
    if kind == "numbers":
        return str(rng.randint(10**6, 10**7 - 1))
    if kind == "words":
        keys = word_keys()
        return keys[rng.randrange(len(keys))]  # random.choice(list) draws exactly this index
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ValueError(f"unknown needle part {kind!r}; known: {', '.join(NEEDLE_TYPES)}")


def haystack_step(config: NiahConfig, length: int) -> int:
    """RULER's `incremental`: the search's lower bound and the per-sample reduction step."""
    if config.haystack == "essay":
        return 500
    return 5 if length < 4096 else 25


@dataclass
class _Draw:
    input: str
    answer_prefix: str
    outputs: list[str]
    queries: list[str]


class _NiahGenerator:
    def __init__(self, config: NiahConfig, seed: int, essays: EssayHaystack | None,
                 layout: Callable[[str], str] = unwrapped):
        self.config = config
        self.seed = seed
        self.essays = essays
        self.layout = layout

    def needle(self, key: str, value: str) -> str:
        return NIAH_NEEDLE.format(type_needle_v=self.config.value_type, key=key, value=value)

    def draw(self, size: int, rng: random.Random) -> _Draw:
        """One sample with a haystack of `size` units, drawing in RULER's order."""
        config = self.config
        keys, values, needles = [], [], []
        for _ in range(config.keys_inserted):
            keys.append(random_needle_part(config.key_type, rng))
            values.append([])
            for _ in range(config.num_values):
                values[-1].append(random_needle_part(config.value_type, rng))
                needles.append(self.needle(keys[-1], values[-1][-1]))
        # RULER shuffles with a fresh generator seeded by the run's seed: the same order every sample.
        random.Random(self.seed).shuffle(needles)
        if config.haystack == "essay":
            context = self.essay_context(size, needles, rng)
        else:
            context = self.line_context(size, needles, rng)

        chosen = rng.sample(range(config.keys_inserted), config.num_queries)
        queries = [keys[index] for index in chosen]
        outputs = [value for index in chosen for value in values[index]]
        query = queries[0] if len(queries) == 1 else ", ".join(queries[:-1]) + ", and " + queries[-1]

        template, answer_prefix, value_type = NIAH.template, NIAH.answer_prefix, config.value_type
        if config.singular:
            for old, new in SINGULAR_REPLACEMENTS:
                template, answer_prefix = template.replace(old, new), answer_prefix.replace(old, new)
            value_type = value_type[:-1]
        fields = dict(type_needle_v=value_type, context=context, query=query)
        # the singular wording applies to RULER's text alone (the original replaces in the model template too)
        return _Draw(self.layout(template.format(**fields)), answer_prefix.format(**fields), outputs, queries)

    def essay_context(self, size: int, needles: list[str], rng: random.Random) -> str:
        """Needles between the sentences of the first `size` essay words, at depths drawn from DEPTHS."""
        sentences = self.essays.sentences(size)
        cuts = sorted(int(len(sentences) * (depth / 100)) for depth in rng.sample(DEPTHS, len(needles)))
        bounds = [0, *cuts, len(sentences)]
        pieces = []
        for number, (start, stop) in enumerate(zip(bounds, bounds[1:])):
            pieces.append(" ".join(sentences[start:stop]))  # may be empty: RULER then doubles a space
            if number < len(needles):
                pieces.append(needles[number])
        return " ".join(pieces)

    def line_context(self, size: int, needles: list[str], rng: random.Random) -> str:
        """Needles among `size` lines of noise or of distractor needles, one per line."""
        config = self.config
        if config.haystack == "noise":
            lines = [NOISE_HAYSTACK] * size
        else:
            lines = [
                self.needle(random_needle_part(config.key_type, rng), random_needle_part(config.value_type, rng))
                for _ in range(size)
            ]
        for index, needle in zip(sorted(rng.sample(range(size), len(needles)), reverse=True), needles):
            lines.insert(index, needle)
        return "\n".join(lines)


def draw_niah(config: NiahConfig, size: int, rng: random.Random, seed: int, essays=None) -> tuple[str, str, list[str]]:
    """(prompt, answer prefix, references) of one sample of `config` with a haystack of `size` units,
    as the task's generator draws it but with no length search: for making training text in RULER's
    format. `essays` is anything with a `sentences(num_words)` method (EssayHaystack, or a span of
    other text); `seed` fixes the order the needles are shuffled into."""
    draw = _NiahGenerator(config, seed, essays).draw(size, rng)
    return draw.input, draw.answer_prefix, draw.outputs


def generate_niah(
    task: str, length: int, tokenizer: Tokenizer, seed: int, num_samples: int, essays: str | None,
    layout: Callable[[str], str] = unwrapped,
) -> list[RulerSample]:
    """`num_samples` samples of NIAH `task` whose prompt (laid out by `layout`, answer prefix included)
    plus the generated tokens fit `length` tokens of `tokenizer`. `essays` (see haystack.load_essays)
    is needed only for the essay haystack."""
    try:
        config = NIAH_TASKS[task]
    except KeyError:
        raise KeyError(f"unknown NIAH task {task!r}; known: {', '.join(NIAH_TASKS)}") from None
    if config.haystack == "essay" and essays is None:
        raise PathEvalError(f"{task} needs the Paul Graham essays: {MISSING_ESSAYS_FIX}")
    generator = _NiahGenerator(config, seed, EssayHaystack.from_text(essays) if config.haystack == "essay" else None,
                               layout)
    budget = length - NIAH.tokens_to_generate
    step = haystack_step(config, length)
    rng = random.Random(seed)

    def prompt_tokens(draw: _Draw) -> int:
        return count_tokens(tokenizer, draw.input + draw.answer_prefix)

    # RULER's search range: up to 3x the size that a small probe's tokens per unit predict.
    tokens_per_unit = prompt_tokens(generator.draw(step, rng)) / step
    upper = max(int(length / tokens_per_unit * 3), 2 * step)
    size = searched_size(lambda probe: prompt_tokens(generator.draw(probe, rng)) <= budget, step, upper)

    samples = []
    for index in range(num_samples):
        draw, tokens, used = first_fitting(lambda units: generator.draw(units, rng), prompt_tokens, size, step, budget)
        samples.append(
            RulerSample(
                index=index,
                input=draw.input,
                outputs=draw.outputs,
                answer_prefix=draw.answer_prefix,
                max_new_tokens=NIAH.tokens_to_generate,
                length=tokens + NIAH.tokens_to_generate,
                extra={"haystack_size": used, "queries": draw.queries},
            )
        )
    return samples
