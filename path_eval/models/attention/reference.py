"""The `reference` backend: the definition, materialised.

Every logit is computed by walking each query back through the Householder transforms one key
at a time (u <- H_j u), so it shares nothing with the chunked WY algorithm it checks. It builds
the full [T, L + T] logit matrix: for tests and small inputs only; float64 capable.
"""
from __future__ import annotations

import os

import torch

from path_eval.errors import PathEvalError
from path_eval.models.attention.inputs import AttentionInputs, KVState, concat_valid, gate_offsets_to_end

MAX_LOGIT_BYTES = int(os.environ.get("PATH_EVAL_REFERENCE_MAX_BYTES", 2 << 30))


def _apply_householder(x: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """H x = x - beta (w . x) w, broadcasting over leading dims."""
    return x - beta[..., None] * (x * w).sum(-1, keepdim=True) * w


def attend(x: AttentionInputs, past: KVState | None, build_state: bool) -> tuple[torch.Tensor, KVState | None]:
    x = x.without_padding_effects()
    f = x.compute_dtype
    B, T, HQ, D = x.q.shape
    H = x.k.shape[2]
    group = HQ // H
    L = 0 if past is None else past.length
    need = B * HQ * T * (L + T) * torch.finfo(f).bits // 8 * 3
    if need > MAX_LOGIT_BYTES:
        raise PathEvalError(
            f"the reference attention backend materialises {T} x {L + T} logits per head "
            f"(~{need / 2**30:.1f} GiB): use attention='torch' for inputs this long")

    per_query_head = lambda t: t.to(f).repeat_interleave(group, dim=2)  # noqa: E731
    q, k, v = x.q.to(f), per_query_head(x.k), per_query_head(x.v)
    transform = x.w is not None
    if transform:
        w, beta = per_query_head(x.w), per_query_head(x.beta)

    # qk[b, h, i, j] = q_i^T H_i ... H_{j+1} k_j, walking each query back one key at a time.
    qk = torch.zeros(B, HQ, T, L + T, dtype=f, device=q.device)
    u = q.clone()
    for s in range(T):
        i = torch.arange(s, T, device=q.device)
        j = i - s
        qk[:, :, i, L + j] = (u[:, i] * k[:, j]).sum(-1).transpose(1, 2)
        if transform:
            u[:, i] = _apply_householder(u[:, i], w[:, j], beta[:, j])
    if past is not None:  # u_i is now H_first ... H_i q_i: plain dot products with transported keys
        qk[..., :L] = torch.einsum("bthd,blhd->bhtl", u, per_query_head(past.k))

    logits = x.scale * qk
    if x.g is not None:
        G = x.g.to(f).cumsum(1).transpose(1, 2)  # [B, HQ, T]
        gate_new = G[..., :, None] - G[..., None, :]
        gate_past = (G[..., :, None] + past.g_to_end.to(f).transpose(1, 2)[..., None, :]) if past is not None \
            else gate_new[..., :0]
        logits = logits + x.gate_scale * torch.cat([gate_past, gate_new], dim=-1)

    allowed = torch.ones(T, L + T, dtype=torch.bool, device=q.device).tril(diagonal=L)
    valid = concat_valid(None if past is None else past.valid, x.key_valid, L, T, B, q.device)
    allowed = allowed[None, None] if valid is None else allowed[None, None] & valid[:, None, None, :]
    logits = logits.masked_fill(~allowed, torch.finfo(f).min)
    values = v if past is None else torch.cat([per_query_head(past.v), v], dim=1)
    out = torch.einsum("bhtl,blhd->bthd", logits.softmax(-1), values).to(x.q.dtype)
    if not build_state:
        return out, None
    return out, _next_state(x, past, f, valid)


def _next_state(x: AttentionInputs, past: KVState | None, f: torch.dtype, valid) -> KVState:
    """Append the segment and transport every key to the new end, one Householder at a time."""
    T = x.k.shape[1]
    k_new = x.k.to(f) if x.w is not None else x.k
    k_old = past.k.to(k_new.dtype) if past is not None else k_new[:, :0]
    if x.w is not None:
        w, beta = x.w.to(f), x.beta.to(f)
        k_new = k_new.clone()
        for t in range(T):
            k_old = _apply_householder(k_old, w[:, None, t], beta[:, None, t])
            k_new[:, :t] = _apply_householder(k_new[:, :t], w[:, None, t], beta[:, None, t])
    g_to_end = gate_offsets_to_end(x, past, f)
    v_old = past.v if past is not None else x.v[:, :0]
    return KVState(torch.cat([k_old, k_new], 1), torch.cat([v_old, x.v], 1), g_to_end, valid)
