"""The A5 word problem (Merrill, Petty, Sabharwal 2024, "The Illusion of State in State-Space
Models", arXiv 2404.08819; its code: jopetty/word-problem), the state-tracking diagnostic the PaTH
paper's Figure 2 follows: A5 is the group of the 60 even permutations of 5 points, not solvable, so
that composing a word of its elements is NC1-complete (a fixed-depth transformer with fixed rotary
positions cannot track it at every length; PaTH's data-dependent transforms may).

Two forms (the suite's `a5: {form: ...}`; the kind: path_eval/kinds/a5.py):

- `product` (Merrill et al.'s): k elements drawn uniformly and independently; the label at every
  position is the product of the prefix (token tagging under a causal mask), an element of A5.
- `identity` (the PaTH paper's prose): k letters drawn uniformly from the generators (1 2 3),
  (1 2 4), (1 2 5) and their inverses; the label at every position says whether the prefix equals
  the identity ("yes" / "no"), so the last one answers "is the word the identity?". A uniform word
  is the identity about once in 60, so a model answering "no" would score 98%: the words are drawn
  half identity, half not (uniform words conditioned on the answer, by rejection), so final-position
  accuracy has chance level 50%. Its earlier positions stay unbalanced; read its final accuracy.

As in jopetty/word-problem (with its abstract_algebra library): the elements are
numbered in lexicographic order of their one-line notation (the images of 0..4), element 0 the
identity "01234"; a product composes as maps, (a . b)(x) = a(b(x)), and the label at position t is
p_t = p_(t-1) . g_t from p_0 = the identity (so its word [5, 17, 33] has labels [5, 34, 19]). A
sequence starts with BOS, whose position is unlabelled, then the k letters.

Departures from the original, all written into the frozen samples' key by GENERATOR_VERSION:
- the original also trains and scores the BOS position (labelled BOS) and right padding; here
  only the k letters' positions are labelled, so token accuracy is over the letters alone;
- it draws 1M distinct words per k and splits them 80/20; here each seed draws its words
  independently (at k = 20 a repeat has probability about 60^-20 per pair);
- the vocabulary is the task's own (`SYMBOLS`): the 60 elements (ids 0-59, as there), "no" and
  "yes" (the identity form's labels), then "<s>" (BOS), "</s>" and "<pad>"; the original puts its
  special tokens at 60-66. The vocabulary
(`SYMBOLS`) is the task's own: a model for it uses these ids (`training/train.py --task a5`).
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Literal

import numpy as np
from path_eval.metrics.tagging import UNLABELLED
from path_eval.tasks.frozen import freeze, read_frozen
from path_eval.tasks.symbols import SymbolVocabulary

Form = Literal["product", "identity"]

ELEMENTS: tuple[tuple[int, ...], ...] = tuple(
    p for p in itertools.permutations(range(5))
    if sum(p[i] > p[j] for i in range(5) for j in range(i + 1, 5)) % 2 == 0)
IDENTITY = 0
_INDEX = {element: index for index, element in enumerate(ELEMENTS)}


def _cycle(*points: int) -> tuple[int, ...]:
    """The one-line notation of the cycle (points[0] points[1] ...) on 0..4."""
    image = list(range(5))
    for here, there in zip(points, points[1:] + points[:1]):
        image[here] = there
    return tuple(image)


def product_of(a: int, b: int) -> int:
    """The element a . b: b applied first, then a."""
    return _INDEX[tuple(ELEMENTS[a][ELEMENTS[b][x]] for x in range(5))]


# MULTIPLY[a, b] = a . b
MULTIPLY = np.array([[product_of(a, b) for b in range(len(ELEMENTS))] for a in range(len(ELEMENTS))], dtype=np.int64)

# The PaTH paper's generators (1 2 3), (1 2 4), (1 2 5) on points 1..5 (here 0..4), and their inverses.
GENERATORS = tuple(_INDEX[_cycle(*cycle)] for cycle in ((0, 1, 2), (0, 1, 3), (0, 1, 4), (0, 2, 1), (0, 3, 1),
                                                         (0, 4, 1)))

# The word length the workshop's models train at (Merrill et al.'s sweep; training/diagnostics.py), the
# length at which the report reads the fewest layers.
TRAINED_LENGTH = 20

NO, YES, BOS = len(ELEMENTS), len(ELEMENTS) + 1, len(ELEMENTS) + 2
# The labels of the identity form after the elements, then the special tokens a checkpoint's
# tokenizer names (no sequence holds them).
VOCABULARY = SymbolVocabulary("A5", tuple("".join(map(str, e)) for e in ELEMENTS) + ("no", "yes", "<s>", "</s>",
                                                                                  "<pad>"))
SYMBOLS = VOCABULARY.symbols
VOCAB_SIZE = len(SYMBOLS)


def prefix_products(words: np.ndarray) -> np.ndarray:
    """products[n, t] = words[n, 0] . words[n, 1] . ... . words[n, t]."""
    products = np.empty_like(words)
    products[:, 0] = words[:, 0]
    for t in range(1, words.shape[1]):
        products[:, t] = MULTIPLY[products[:, t - 1], words[:, t]]
    return products


def generate(count: int, length: int, form: Form = "product", *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` words of `length` letters after BOS and their labels (UNLABELLED at BOS), both
    [count, length + 1] int64, a pure function of its arguments."""
    words, labels = draw_words(count, length, form, seed)
    bos = np.full((count, 1), BOS, dtype=np.int64)
    return np.concatenate([bos, words], axis=1), np.concatenate([np.full_like(bos, UNLABELLED), labels], axis=1)


def draw_words(count: int, length: int, form: Form, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The letters of `count` words and their labels, both [count, length]."""
    if length < 1 or (form == "identity" and length < 2):
        raise ValueError(f"an A5 {form} word has at least {2 if form == 'identity' else 1} letters, not {length}")
    rng = np.random.Generator(np.random.PCG64(seed))
    if form == "product":
        words = rng.integers(0, len(ELEMENTS), size=(count, length), dtype=np.int64)
        return words, prefix_products(words)
    if form != "identity":
        raise ValueError(f"unknown A5 form {form!r}: product or identity")
    letters = np.array(GENERATORS, dtype=np.int64)
    wanted = {True: (count + 1) // 2, False: count // 2}  # identity words first, then the others, then shuffled
    kept: dict[bool, list[np.ndarray]] = {True: [], False: []}
    while any(sum(len(w) for w in kept[answer]) < wanted[answer] for answer in kept):
        words = letters[rng.integers(0, len(letters), size=(max(count, 1024), length))]
        is_identity = prefix_products(words)[:, -1] == IDENTITY
        for answer in kept:
            kept[answer].append(words[is_identity == answer])
    words = np.concatenate([np.concatenate(kept[True])[:wanted[True]], np.concatenate(kept[False])[:wanted[False]]])
    words = words[rng.permutation(count)]
    return words, np.where(prefix_products(words) == IDENTITY, YES, NO)


# Bumped whenever the generator's output changes for the same arguments: older frozen sets are then
# never reused.
GENERATOR_VERSION = "1"


def frozen_words(task: str, form: Form, length: int, seed: int, count: int,
                 root: Path | None = None) -> tuple[Path, np.ndarray, np.ndarray]:
    """The `count` words of `length` letters for this seed (after BOS) and their labels, frozen to
    disk as the other generated tasks' samples are (`path_eval.tasks.frozen`), and the file holding
    them."""
    key = {"task": f"a5/{task}", "length": length, "seed": seed, "samples": count, "form": form,
           "generator_version": GENERATOR_VERSION}

    def rows() -> list[dict]:
        words, labels = generate(count, length, form, seed=seed)
        return [{"input": w.tolist(), "target": y.tolist()} for w, y in zip(words, labels)]

    frozen = freeze(key, rows, root)
    stored = read_frozen(frozen)
    return frozen, np.array([row["input"] for row in stored], np.int64), np.array([row["target"] for row in stored],
                                                                                 np.int64)
