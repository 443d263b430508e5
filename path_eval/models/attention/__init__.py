"""Attention backends, selectable by name. Each computes the same function (see `inputs`).

`reference` is the definition materialised (tests); `torch` is the chunked algorithm, the CPU
default; `triton` runs the kernels of `path_eval.kernels` (the CUDA default; on the CPU only under
TRITON_INTERPRET=1). Each registers itself with `register_backend` (`registry`), as other backends can.
"""
from __future__ import annotations

import importlib.util

import torch

from path_eval.kernels.path_attn import supported
from path_eval.models.attention import kernel_backend, reference, torch_backend  # noqa: F401 (they register)
from path_eval.models.attention.inputs import AttentionInputs, KVState
from path_eval.models.attention.registry import BACKENDS, Backend, get_backend, register_backend


def default_backend(device: torch.device | str, dtype: torch.dtype, head_dim: int) -> str:
    """The fastest registered backend that runs a model of this dtype and head dim on `device`: the
    Triton kernels on CUDA when they take both, else the torch backend (float64 models, head dims
    that are not a power of two from 16 to 128, no triton, no GPU)."""
    if (torch.device(device).type == "cuda" and dtype in supported.DTYPES and head_dim in supported.HEAD_DIMS
            and importlib.util.find_spec("triton") is not None):
        return "triton"
    return "torch"


__all__ = ["AttentionInputs", "KVState", "Backend", "BACKENDS", "register_backend", "default_backend", "get_backend"]
