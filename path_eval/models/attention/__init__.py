"""Attention backends, selectable by name. Each computes the same function (see `inputs`).

`reference` is the definition materialised (tests); `torch` is the chunked algorithm, the CPU
default; `triton` runs the kernels of `path_eval.kernels` (the CUDA default; on the CPU only under
TRITON_INTERPRET=1). Other backends register themselves with `register_backend`.
"""
from __future__ import annotations

import importlib.util
from typing import Callable

import torch

from path_eval.errors import PathEvalError
from path_eval.kernels.path_attn import supported
from path_eval.models.attention import blockwise, reference
from path_eval.models.attention.inputs import AttentionInputs, KVState

Backend = Callable[[AttentionInputs, "KVState | None", bool], "tuple[torch.Tensor, KVState | None]"]



def _triton(x: AttentionInputs, past, build_state: bool):
    """Imported on first use: triton is heavy to import and absent on some machines."""
    if importlib.util.find_spec("triton") is None:
        raise PathEvalError("the triton attention backend needs the triton package: pip install triton, "
                            "or choose attention='torch'")
    from path_eval.models.attention import kernel_backend
    return kernel_backend.attend(x, past, build_state)


BACKENDS: dict[str, Backend] = {
    "reference": reference.attend,
    "torch": blockwise.attend,
    "triton": _triton,
}


def register_backend(name: str, backend: Backend) -> None:
    """The slot for faster backends (the Triton kernels)."""
    BACKENDS[name] = backend


def default_backend(device: torch.device | str, dtype: torch.dtype, head_dim: int) -> str:
    """The fastest registered backend that runs a model of this dtype and head dim on `device`: the
    Triton kernels on CUDA when they take both, else the torch backend (float64 models, head dims
    that are not a power of two from 16 to 128, no triton, no GPU)."""
    if (torch.device(device).type == "cuda" and dtype in supported.DTYPES and head_dim in supported.HEAD_DIMS
            and importlib.util.find_spec("triton") is not None):
        return "triton"
    return "torch"


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise PathEvalError(
            f"unknown attention backend {name!r}: choose one of {', '.join(sorted(BACKENDS))}") from None


__all__ = ["AttentionInputs", "KVState", "BACKENDS", "register_backend", "default_backend", "get_backend"]
