"""MQRAR-N: multi-query repeated associative recall, N-back (the PaTH paper's section 4.1, on
Tan et al. 2024, "Scaling Stick-Breaking Attention", arXiv 2410.17980, whose MQRAR generator is
zoology/data/recent_associative_recall.py on the release branch of Shawn Tan's fork of
Zoology). Each key is reassigned whenever it is queried, so recalling its value means tracking
its state, not looking one pair up; N-back asks for the value N assignments ago.

A sequence of `length` tokens (vocabulary 8192: keys are ids 1-4095, values 4096-8191; id 0 is
never drawn; a suite's task gives `mqrar: {n: N, pairs: P}`, the kind path_eval/kinds/mqrar.py):

- the assignments: `pairs` key-value pairs, k1 v1 k2 v2 ..., keys and values drawn uniformly with
  replacement (a key drawn twice is reassigned by its second pair);
- the query region, the rest: (length - 2 pairs) / 2 slots, of which `pairs` distinct ones hold a
  query, chosen with probability proportional to (slot + 1)^(a - 1), a = 0.01 (MQRAR's power law:
  most queries come early, some far); a query is a key drawn uniformly with replacement from the
  sequence's assignments and sits at the slot's first position; every other position holds a value
  drawn uniformly, so the token after each query is a value, which reassigns the key.

The label sits at each key (in both regions): the value assigned to that key N assignments before
this one, i.e. the N-th most recent value when the key is read; a key with fewer than N values so
far has no label, and nor does any other position. N = 1 is MQRAR itself (the current value).

Where the PaTH paper is silent (it gives N = 1..4, 32 pairs, length 768, and the model shape), the
generator's choices are MQRAR's: its vocabulary, key and value ranges, sampling with replacement,
power law and query count (one per pair). Departures: MQRAR seeds numpy's global generator; here
each call has its own seeded generator, so the words differ from MQRAR's for the same seed though
they follow its law; at large N many keys are never queried N times, so some sequences carry no
label (the metrics leave them out: `path_eval.metrics.tagging`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from path_eval.metrics.tagging import UNLABELLED
from path_eval.tasks.frozen import freeze, read_frozen
from path_eval.tasks.symbols import SymbolVocabulary

VOCAB = 8192
FIRST_VALUE = VOCAB // 2  # keys are 1 .. FIRST_VALUE - 1, values FIRST_VALUE .. VOCAB - 1
POWER_A = 0.01
PAIRS = 32
# id 0 ("<pad>", never drawn, as MQRAR's unused 0), the keys, the values, then BOS and EOS, which no
# sequence holds but a checkpoint's tokenizer names.
VOCABULARY = SymbolVocabulary("MQRAR-N", ("<pad>",) + tuple(f"k{i}" for i in range(1, FIRST_VALUE))
                              + tuple(f"v{i}" for i in range(VOCAB - FIRST_VALUE)) + ("<s>", "</s>"))
SYMBOLS = VOCABULARY.symbols
VOCAB_SIZE = len(SYMBOLS)


def check_length(length: int, pairs: int) -> None:
    """A length holds the pairs and a query region of at least one slot per query, in whole slots."""
    if length % 2 or length < 4 * pairs:
        raise ValueError(f"an MQRAR sequence of {pairs} pairs is an even number of at least {4 * pairs} tokens, "
                         f"not {length}")


def draw_sequences(count: int, length: int, pairs: int, rng: np.random.Generator) -> np.ndarray:
    """`count` sequences [count, length] int64 by MQRAR's law (above)."""
    check_length(length, pairs)
    prefix = 2 * pairs
    slots = (length - prefix) // 2
    keys = rng.integers(1, FIRST_VALUE, size=(count, pairs))
    values = rng.integers(FIRST_VALUE, VOCAB, size=(count, pairs))
    sequences = rng.integers(FIRST_VALUE, VOCAB, size=(count, length))  # the query region's values
    sequences[:, 0:prefix:2], sequences[:, 1:prefix:2] = keys, values
    # `pairs` distinct slots drawn one after another with probability proportional to the weights of
    # those left (numpy's choice without replacement), for all rows at once: the top `pairs` of
    # log(weight) + Gumbel noise (the Gumbel top-k trick draws exactly that law).
    log_weights = (POWER_A - 1) * np.log(np.arange(slots) + 1.0)
    chosen = np.argpartition(-(log_weights + rng.gumbel(size=(count, slots))), pairs - 1, axis=1)[:, :pairs]
    queried = np.take_along_axis(keys, rng.integers(0, pairs, size=(count, pairs)), axis=1)
    np.put_along_axis(sequences, prefix + 2 * chosen, queried, axis=1)
    return sequences


def n_back_labels(sequences: np.ndarray, n: int) -> np.ndarray:
    """labels[s, t]: at a key, the value that followed the n-th previous occurrence of the same key
    in the sequence (each occurrence's next token assigns it); UNLABELLED elsewhere and where the
    key has occurred fewer than n times before."""
    count, length = sequences.shape
    labels = np.full(sequences.shape, UNLABELLED, dtype=np.int64)
    is_key = sequences < FIRST_VALUE
    is_key[:, -1] = False  # a key needs the next token to be assigned; generated sequences never end on one
    rows, positions = np.nonzero(is_key)  # row-major: by sequence, then by position
    keys = sequences[rows, positions]
    order = np.lexsort((positions, keys, rows))  # grouped by (sequence, key), in order of position
    rows, positions, keys = rows[order], positions[order], keys[order]
    if len(order) > n:
        same = (rows[n:] == rows[:-n]) & (keys[n:] == keys[:-n])
        labels[rows[n:][same], positions[n:][same]] = sequences[rows[:-n][same], positions[:-n][same] + 1]
    return labels


def generate(count: int, length: int, n: int, pairs: int = PAIRS, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` sequences of `length` tokens and their N-back labels, both [count, length] int64, a
    pure function of its arguments."""
    if n < 1:
        raise ValueError(f"MQRAR-N looks back N >= 1 assignments, not {n}")
    sequences = draw_sequences(count, length, pairs, np.random.Generator(np.random.PCG64(seed)))
    return sequences, n_back_labels(sequences, n)


# Bumped whenever the generator's output changes for the same arguments: older frozen sets are then
# never reused.
GENERATOR_VERSION = "1"


def frozen_sequences(task: str, n: int, pairs: int, length: int, seed: int, count: int,
                     root: Path | None = None) -> tuple[Path, np.ndarray, np.ndarray]:
    """The `count` sequences of `length` tokens for this seed and their labels, frozen to disk as
    the other generated tasks' samples are (`path_eval.tasks.frozen`), and the file holding them."""
    key = {"task": f"mqrar/{task}", "length": length, "seed": seed, "samples": count, "n": n, "pairs": pairs,
           "generator_version": GENERATOR_VERSION}

    def rows() -> list[dict]:
        sequences, labels = generate(count, length, n, pairs, seed=seed)
        return [{"input": s.tolist(), "target": y.tolist()} for s, y in zip(sequences, labels)]

    frozen = freeze(key, rows, root)
    stored = read_frozen(frozen)
    return frozen, np.array([row["input"] for row in stored], np.int64), np.array([row["target"] for row in stored],
                                                                                 np.int64)
