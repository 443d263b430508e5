"""Texts' tokens kept for the process's later models that tokenise exactly alike.

A study runs every model on the same prompts, and on a small model encoding a long prompt costs
more than the model's forward of it, so every model after the first would otherwise redo what the
first did. Tokens are looked up by the tokenizer's complete definition (`tokenizer_key`), the encoding's
special-token option and the text's digest, so a hit is the tokens a fresh encoding gives.

The store is bounded in bytes (int32 arrays, 4 bytes a token, and about 300 bytes an entry for its
key and array): a run takes its prompts in the same order for each model, so once the store is
full new texts are not kept, which leaves every later model the first texts' hits, where evicting
old entries would leave none. A tokenizer's key is read when its adapter is made: a tokenizer
changed afterwards (tokens added, special-token options set) needs a new adapter.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable

import numpy as np

# 256 MiB: some 64M tokens of long prompts (a study like the zoo's encodes about 25M); RULER at 64K
# over 13 tasks keeps its first fifth.
BYTE_CAP = 1 << 28
ENTRY_BYTES = 320  # an entry's key tuple, digest, array header and dict slot, measured on CPython 3.11


def tokenizer_key(tokenizer) -> str | None:
    """A digest of everything that decides a fast tokenizer's encodings: its class, the backend's
    whole serialised definition (normaliser, pre-tokeniser, model, post-processor, added tokens) and
    whether special tokens in the text are split. None for a tokenizer without a serialisable
    backend (a slow one): its encodings are not shared."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return None
    # The serialised form holds the last call's padding and truncation, which every encoding call here
    # resets to none: set as they will be, so that a tokenizer last used with padding keys alike.
    backend.no_padding()
    backend.no_truncation()
    split = getattr(tokenizer, "split_special_tokens", False)
    kind = f"{type(tokenizer).__module__}.{type(tokenizer).__qualname__}"
    blob = "\n".join([kind, f"split_special_tokens={split}", backend.to_str()])
    return hashlib.sha256(blob.encode()).hexdigest()


class EncodingStore:
    """Tokens by (tokenizer key, option, text digest), at most `cap` bytes in all (`ENTRY_BYTES` an
    entry and 4 a token)."""

    def __init__(self, cap: int = BYTE_CAP):
        self.cap = cap
        self.bytes_kept = 0
        self._entries: dict[tuple, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every kept encoding."""
        self._entries.clear()
        self.bytes_kept = 0

    def encode(self, key: str | None, option: Hashable, texts: list[str],
               encode: Callable[[list[str]], list[list[int]]], arrays: bool = False) -> list:
        """Each text's tokens: kept ones as stored, the rest from one `encode` call over them (and kept
        while the cap allows). Without a key (`tokenizer_key` None) everything is encoded. Lists of
        ints, or with `arrays` read-only int32 arrays: the kept ones themselves, with no copy (a
        16K-token list costs about 0.7 ms to make from an array, and as much to turn back into one)."""
        shaped = _frozen_array if arrays else list
        if key is None:
            return [shaped(ids) for ids in encode(texts)]
        names = [(key, option, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
                 for text in texts]
        found: list = [None] * len(texts)
        missing = []
        for i, name in enumerate(names):
            kept = self._entries.get(name)
            if kept is None:
                missing.append(i)
            else:
                found[i] = kept if arrays else kept.tolist()
        if missing:
            for i, ids in zip(missing, encode([texts[i] for i in missing])):
                tokens = _frozen_array(ids)
                found[i] = tokens if arrays else list(ids)
                self._keep(names[i], tokens)
        return found

    def _keep(self, name: tuple, tokens: np.ndarray) -> None:
        size = ENTRY_BYTES + 4 * len(tokens)
        if name in self._entries or self.bytes_kept + size > self.cap:
            return
        self._entries[name] = tokens
        self.bytes_kept += size


def _frozen_array(ids) -> np.ndarray:
    """`ids` as an int32 array no one can write to: the store hands out the kept arrays themselves."""
    tokens = np.asarray(ids, dtype=np.int32)
    tokens.flags.writeable = False
    return tokens


# One store per process: the runner's models are evaluated one after another in it.
ENCODING_STORE = EncodingStore()
