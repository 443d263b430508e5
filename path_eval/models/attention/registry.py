"""The one registry of attention backends: a name (what `attention=` and `--attention` take) to the
function that computes attention. Each backend module registers itself when imported
(`path_eval.models.attention` imports them all); the model looks its backend up here by name."""
from __future__ import annotations

from typing import Callable

import torch

from path_eval.errors import PathEvalError
from path_eval.models.attention.inputs import AttentionInputs, KVState

Backend = Callable[[AttentionInputs, "KVState | None", bool], "tuple[torch.Tensor, KVState | None]"]

BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, backend: Backend) -> None:
    """Make `backend` selectable as `name`. A name is registered once: a second backend under it
    would silently change what a model computes."""
    if name in BACKENDS:
        raise ValueError(f"attention backend {name!r} is already registered")
    BACKENDS[name] = backend


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise PathEvalError(
            f"unknown attention backend {name!r}: choose one of {', '.join(sorted(BACKENDS))}") from None
