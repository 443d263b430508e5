"""Attention backends, selectable by name. Each computes the same function (see `inputs`).

`reference` is the definition materialised (tests); `torch` is the chunked algorithm, the CPU
default. A GPU backend registers itself here under its own name when its kernels import.
"""
from __future__ import annotations

from typing import Callable

import torch

from path_eval.errors import PathEvalError
from path_eval.models.attention import blockwise, reference
from path_eval.models.attention.inputs import AttentionInputs, KVState

Backend = Callable[[AttentionInputs, "KVState | None", bool], "tuple[torch.Tensor, KVState | None]"]

BACKENDS: dict[str, Backend] = {
    "reference": reference.attend,
    "torch": blockwise.attend,
}


def register_backend(name: str, backend: Backend) -> None:
    """The slot for faster backends (the Triton kernels)."""
    BACKENDS[name] = backend


def default_backend(device: torch.device | str) -> str:
    """The fastest registered backend that runs on `device`."""
    if torch.device(device).type == "cuda" and "triton" in BACKENDS:
        return "triton"
    return "torch"


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise PathEvalError(
            f"unknown attention backend {name!r}: choose one of {', '.join(sorted(BACKENDS))}") from None


__all__ = ["AttentionInputs", "KVState", "BACKENDS", "register_backend", "default_backend", "get_backend"]
