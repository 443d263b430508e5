"""Flip-flop language modelling (Liu et al. 2023, "Exposing Attention Glitches with Flip-Flop
Language Modeling"): a sequence of instruction-bit pairs, each instruction write (w), read (r) or
ignore (i). A read's bit is the bit of the latest write; write and ignore bits are random.

FFL(p_ignore): the first instruction is a write and the last a read; every other instruction is an
ignore with probability p_ignore and otherwise a write or a read with equal probability. The
paper's splits at length 512: in-distribution p = 0.8, sparse out-of-distribution p = 0.98, dense
out-of-distribution p = 0.1. A model's error is the share of read positions whose predicted bit is
wrong (the argmax over the whole vocabulary at the position before the bit).

The flip-flop models use this tiny vocabulary of their own, one token per symbol; the text form
("w 1 i 0 r 1") is what the zoo's language-model mixture carries. As a task of the harness (a suite
task with `flipflop: {p_ignore: P}`), the sequences are generated from the run's seed, frozen, and
scored with one teacher-forced forward per sequence (`path_eval.evaluators.flipflop`).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from path_eval.metrics import flipflop as flipflop_metric
from path_eval.tasks.frozen import freeze, frozen_rows, stored_sha256
from path_eval.tasks.symbols import SymbolVocabulary

WRITE, READ, IGNORE, ZERO, ONE, BOS, EOS, PAD = range(8)
SYMBOLS = ("w", "r", "i", "0", "1", "<s>", "</s>", "<pad>")
VOCAB_SIZE = len(SYMBOLS)
LENGTH = 512
SPLITS = {"in": 0.8, "sparse": 0.98, "dense": 0.1}


def generate(count: int, p_ignore: float, *, length: int = LENGTH, seed: int) -> np.ndarray:
    """`count` FFL(p_ignore) sequences of `length` tokens ([count, length] int64), a pure function
    of its arguments."""
    if length < 4 or length % 2:
        raise ValueError(f"a flip-flop length is an even number of at least 4 tokens, not {length}")
    if not 0.0 <= p_ignore <= 1.0:
        raise ValueError(f"p_ignore is a probability, not {p_ignore}")
    rng = np.random.Generator(np.random.PCG64(seed))
    pairs = length // 2
    p_other = (1.0 - p_ignore) / 2
    instructions = rng.choice(np.array([WRITE, READ, IGNORE]), p=[p_other, p_other, p_ignore], size=(count, pairs))
    instructions[:, 0], instructions[:, -1] = WRITE, READ
    bits = rng.integers(0, 2, size=(count, pairs))
    positions = np.broadcast_to(np.arange(pairs), (count, pairs))
    latest_write = np.maximum.accumulate(np.where(instructions == WRITE, positions, 0), axis=1)
    bits = np.where(instructions == READ, np.take_along_axis(bits, latest_write, axis=1), bits)
    sequences = np.empty((count, length), dtype=np.int64)
    sequences[:, 0::2], sequences[:, 1::2] = instructions, ZERO + bits
    return sequences


def read_positions(tokens: np.ndarray) -> np.ndarray:
    """Boolean mask [N, T] of the bit positions that follow a read instruction."""
    return flipflop_metric.read_positions(tokens, READ)


def read_errors(tokens: np.ndarray, predictions: np.ndarray) -> tuple[int, int]:
    """(wrong, reads) of `predictions` on `tokens` (`path_eval.metrics.flipflop.read_errors`)."""
    return flipflop_metric.read_errors(tokens, predictions, READ)


def read_error_rate(tokens: np.ndarray, predictions: np.ndarray) -> float:
    """The share of read positions whose predicted bit is wrong (the `flipflop_error` metric)."""
    return flipflop_metric.flipflop_error(tokens, predictions, READ)


def to_text(sequence) -> str:
    """The text form, symbols separated by spaces: "w 1 i 0 r 1"."""
    return " ".join(SYMBOLS[int(token)] for token in sequence)


# Bumped whenever the generator's output changes for the same arguments: older frozen sets are then
# never reused.
GENERATOR_VERSION = "1"


def frozen_sequences(task: str, p_ignore: float, length: int, seed: int, count: int,
                     root: Path | None = None) -> tuple[Path, np.ndarray]:
    """The `count` FFL(p_ignore) sequences of `length` tokens for this seed, frozen to disk like
    RULER's samples (`path_eval.tasks.frozen`), and the file that holds them."""
    key = {"task": f"flipflop/{task}", "length": length, "seed": seed, "samples": count, "p_ignore": p_ignore,
           "generator_version": GENERATOR_VERSION}
    frozen = freeze(key, lambda: [{"tokens": row.tolist()}
                                  for row in generate(count, p_ignore, length=length, seed=seed)], root)
    return frozen, _parsed(frozen, stored_sha256(frozen)).astype(np.int64)  # a copy: the kept one stays as read


@lru_cache(maxsize=16)
def _parsed(frozen: Path, samples_sha256: str) -> np.ndarray:
    """A frozen set's sequences as an array, parsed once a process for each content (`freeze` has
    checked the file against `samples_sha256`): every flip-flop model of a study reads the same sets,
    twice each (the samples phase, then its evaluation), and parsing a set's JSON costs far more than
    a forward of these small models. Kept in the smallest unsigned type that holds its symbols (one
    byte: the zoo study's sets would take about 100 MB as int64)."""
    sequences = np.array([row["tokens"] for row in frozen_rows(frozen, sha256=samples_sha256)], dtype=np.int64)
    if sequences.size and sequences.min() >= 0:
        return sequences.astype(np.min_scalar_type(sequences.max()))
    return sequences


# A model for these sequences uses this vocabulary (the plan refuses any other, from its tokenizer's
# files; the evaluator again once it is loaded).
VOCABULARY = SymbolVocabulary("flip-flop", SYMBOLS)
uses_vocabulary = VOCABULARY.used_by
check_vocabulary = VOCABULARY.check
