"""The definition, materialised: the reference every PaTH / FoX kernel is tested against.

Every logit is computed by walking each query back through the Householder transforms one key at
a time (u <- H_j u), so it shares nothing with the chunked WY algorithm it checks. It builds the
[rows, L + T] logit matrix (every query row, or the last `last_rows`): for tests, small inputs and
a few rows of long ones; float64 capable.

    logit(i, j) = scale * q_i^T H_i H_{i-1} ... H_{j+1} k_j + gate_scale * (G_i - G_j)

with H_t = I - beta_t w_t w_t^T and G the cumulative sum of the log forget gates g. Cached keys are
transported to the cache end, K~_j = H_c ... H_{j+1} k_j; `cache_g` holds the sum of log gates
over (j, c]. Padding (key_valid False) is skipped: no key, identity transform, no decay.
"""
from __future__ import annotations

import torch


def householder(x: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """H x = x - beta (w . x) w, broadcasting over leading dims."""
    return x - beta[..., None] * (x * w).sum(-1, keepdim=True) * w


def _inert(beta, g, key_valid):
    if key_valid is None:
        return beta, g
    return (None if beta is None else beta * key_valid[..., None],
            None if g is None else g * key_valid[..., None])


def naive_attention(q, k, v, *, scale: float, w=None, beta=None, g=None, gate_scale: float = 1.0,
                    key_valid=None, cache_k=None, cache_v=None, cache_g=None, cache_valid=None,
                    dtype: torch.dtype = torch.float64, last_rows: int | None = None) -> torch.Tensor:
    """out [B, T, HQ, D] in `dtype` (the last `last_rows` rows alone: [B, last_rows, HQ, D], in
    memory O(last_rows x T)). Shapes as in `path_attention`: q [B, T, HQ, D]; k, v, w [B, T, H, D];
    beta [B, T, H]; g [B, T, HQ]; cache_k / cache_v [B, L, H, D]; cache_g [B, L, HQ]."""
    f = dtype
    beta, g = _inert(beta, g, key_valid)
    B, T, HQ, D = q.shape
    first = T - (T if last_rows is None else min(last_rows, T))  # the first row computed
    group = HQ // k.shape[2]
    L = 0 if cache_k is None else cache_k.shape[1]
    per_query_head = lambda t: t.to(f).repeat_interleave(group, dim=2)  # noqa: E731
    q, k, v = q.to(f), per_query_head(k), per_query_head(v)

    qk = torch.zeros(B, HQ, T - first, L + T, dtype=f, device=q.device)
    u = q[:, first:].clone()
    if w is not None:
        w, beta = per_query_head(w), per_query_head(beta)
    for s in range(T):  # qk[b, h, i, i - s] = q_i^T H_i ... H_{i-s+1} k_{i-s}
        i = torch.arange(max(s, first), T, device=q.device)
        j, row = i - s, i - first
        qk[:, :, row, L + j] = (u[:, row] * k[:, j]).sum(-1).transpose(1, 2)
        if w is not None:
            u[:, row] = householder(u[:, row], w[:, j], beta[:, j])
    if L:  # u_i is now H_first ... H_i q_i: plain dot products with transported keys
        qk[..., :L] = torch.einsum("bthd,blhd->bhtl", u, per_query_head(cache_k))

    logits = scale * qk
    if g is not None:
        G = g.to(f).cumsum(1).transpose(1, 2)  # [B, HQ, T]
        gate_new = G[..., first:, None] - G[..., None, :]
        gate_past = G[..., first:, None] + cache_g.to(f).transpose(1, 2)[..., None, :] if L else gate_new[..., :0]
        logits = logits + gate_scale * torch.cat([gate_past, gate_new], dim=-1)

    rows = torch.arange(first, T, device=q.device)
    allowed = (torch.arange(L + T, device=q.device)[None, :] <= rows[:, None] + L)[None, None]  # causal
    if key_valid is not None or cache_valid is not None:
        ones = lambda n: torch.ones(B, n, dtype=torch.bool, device=q.device)  # noqa: E731
        valid = torch.cat([ones(L) if cache_valid is None else cache_valid,
                           ones(T) if key_valid is None else key_valid], dim=1)
        allowed = allowed & valid[:, None, None, :]
    logits = logits.masked_fill(~allowed, torch.finfo(f).min)
    values = v if not L else torch.cat([per_query_head(cache_v), v], dim=1)
    return torch.einsum("bhtl,blhd->bthd", logits.softmax(-1), values)


def naive_transport(k, w, beta, key_valid=None, cache_k=None, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Keys of cache + segment moved to the segment end, one Householder at a time: [B, L + T, H, D]."""
    beta, _ = _inert(beta, None, key_valid)
    k_new = k.to(dtype).clone()
    k_old = cache_k.to(dtype) if cache_k is not None else k_new[:, :0]
    w, beta = w.to(dtype), beta.to(dtype)
    for t in range(k.shape[1]):
        k_old = householder(k_old, w[:, None, t], beta[:, None, t])
        k_new[:, :t] = householder(k_new[:, :t], w[:, None, t], beta[:, None, t])
    return torch.cat([k_old, k_new], 1)
