"""The `reference` backend: the definition, materialised (`path_eval.kernels.path_attn.naive`).

It builds the full [T, L + T] logit matrix: for tests and small inputs only; float64 capable.
"""
from __future__ import annotations

import os

import torch

from path_eval.errors import PathEvalError
from path_eval.kernels.path_attn.naive import naive_attention, naive_transport
from path_eval.models.attention.inputs import AttentionInputs, KVState, concat_valid, gate_offsets_to_end
from path_eval.models.attention.registry import register_backend

MAX_LOGIT_BYTES = int(os.environ.get("PATH_EVAL_REFERENCE_MAX_BYTES", 2 << 30))


def attend(x: AttentionInputs, past: KVState | None, build_state: bool) -> tuple[torch.Tensor, KVState | None]:
    f = x.compute_dtype
    B, T, HQ, D = x.q.shape
    L = 0 if past is None else past.length
    need = B * HQ * T * (L + T) * torch.finfo(f).bits // 8 * 3
    if need > MAX_LOGIT_BYTES:
        raise PathEvalError(
            f"the reference attention backend materialises {T} x {L + T} logits per head "
            f"(~{need / 2**30:.1f} GiB): use attention='torch' for inputs this long")
    cache = {} if past is None else dict(cache_k=past.k, cache_v=past.v, cache_g=past.g_to_end, cache_valid=past.valid)
    out = naive_attention(x.q, x.k, x.v, scale=x.scale, w=x.w, beta=x.beta, g=x.g, gate_scale=x.gate_scale,
                          key_valid=x.key_valid, dtype=f, **cache).to(x.q.dtype)
    if not build_state:
        return out, None
    x = x.without_padding_effects()
    if x.w is not None:
        keys = naive_transport(x.k, x.w, x.beta, x.key_valid, None if past is None else past.k, f)
    else:
        keys = x.k if past is None else torch.cat([past.k.to(x.k.dtype), x.k], 1)
    valid = concat_valid(None if past is None else past.valid, x.key_valid, L, T, B, x.q.device)
    v_old = past.v if past is not None else x.v[:, :0]
    return out, KVState(keys, torch.cat([v_old, x.v], 1), gate_offsets_to_end(x, past, f), valid)


register_backend("reference", attend)
