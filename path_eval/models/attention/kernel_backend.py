"""The `triton` backend: the kernels of `path_eval.kernels.path_attn`, the default on CUDA.

Without a cache it is one Triton forward. With one, the layer state is a `PathKVCache`: keys
transported in GEMM-shaped folds and a pending tail, so decoding reads the cache like plain
attention does. CPU tensors work under TRITON_INTERPRET=1 (tests). The kernels are imported on
the first call: triton is heavy to import and absent on some machines, and registering the backend
must need neither.
"""
from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import torch

from path_eval.errors import PathEvalError
from path_eval.models.attention.inputs import AttentionInputs
from path_eval.models.attention.registry import register_backend

if TYPE_CHECKING:
    from path_eval.kernels.path_attn.cache import PathKVCache


def attend(x: AttentionInputs, past: PathKVCache | None, build_state: bool) -> tuple[torch.Tensor, PathKVCache | None]:
    if importlib.util.find_spec("triton") is None:
        raise PathEvalError("the triton attention backend needs the triton package: pip install "
                            "'path-eval[gpu]' (or triton), or choose attention='torch'")
    from path_eval.kernels.path_attn.cache import PathKVCache
    from path_eval.kernels.path_attn.fwd import path_attention

    args = dict(scale=x.scale, w=x.w, beta=x.beta, g=x.g, gate_scale=x.gate_scale, key_valid=x.key_valid)
    if past is None and not build_state:
        return path_attention(x.q, x.k, x.v, **args)[0], None
    cache = past if past is not None else PathKVCache()
    out = cache.attend(x.q, x.k, x.v, append=build_state, **args)
    return out, cache if build_state else None


register_backend("triton", attend)
