"""The `torch` backend: PaTH / FoX / plain attention in chunks, O(T x chunk) memory, any device.

The per-chunk preparation (UT transform, in-chunk transformed queries, keys transported to
their chunk end, in-chunk logits) is shared with the Triton kernels (`path_eval.kernels.path_attn.chunks`).
Across chunks every query block walks the key chunks right to left, one diagonal of the block
matrix per step (all query blocks in one batched matmul): score q'.k' of the key chunk, then
q' <- q' - (q' W^T)(T W). Softmax is online (running max, sum, weighted values), so nothing of
size T x T exists. After the walk q' = H_first ... H_a q_a, which is exactly what cached keys
(transported to the cache end) need: the cache is plain attention, in key blocks.
"""
from __future__ import annotations

import math

import torch

from path_eval.kernels.path_attn.chunks import Chunks, prepare, transport_state
from path_eval.models.attention.inputs import AttentionInputs, KVState, concat_valid, gate_offsets_to_end
from path_eval.models.attention.registry import register_backend

CHUNK = 64
CACHE_BLOCK = 1024


def _exp_without_subnormals(x: torch.Tensor) -> torch.Tensor:
    """exp(x), with weights below e^-80 set to exactly 0: subnormal floats make later CPU
    arithmetic ~10x slower, and weights that small change no result."""
    return torch.where(x > -80.0, torch.exp(x), torch.zeros((), dtype=x.dtype, device=x.device))


class _OnlineSoftmax:
    """Running max / normaliser / weighted values over score blocks of shape [..., rows, keys]."""

    def __init__(self, rows_shape, dv: int, dtype, device):
        self.m = torch.full(rows_shape, -math.inf, dtype=dtype, device=device)
        self.l = torch.zeros(rows_shape, dtype=dtype, device=device)
        self.acc = torch.zeros(*rows_shape, dv, dtype=dtype, device=device)

    def add(self, scores: torch.Tensor, values: torch.Tensor, rows: slice = slice(None)) -> None:
        """Fold in `scores` [..., R, K] against `values` [..., K, Dv] for the rows in dim 2 `rows`."""
        m_old, l_old, acc_old = self.m[:, :, rows], self.l[:, :, rows], self.acc[:, :, rows]
        m_new = torch.maximum(m_old, scores.amax(-1))
        p = _exp_without_subnormals(scores - m_new[..., None])
        alpha = _exp_without_subnormals(m_old - m_new)
        self.m[:, :, rows] = m_new
        self.l[:, :, rows] = l_old * alpha + p.sum(-1)
        self.acc[:, :, rows] = acc_old * alpha[..., None] + p @ values

    def result(self) -> torch.Tensor:
        return self.acc / self.l[..., None]


def attend(x: AttentionInputs, past: KVState | None, build_state: bool,
           chunk_size: int = CHUNK) -> tuple[torch.Tensor, KVState | None]:
    x = x.without_padding_effects()
    f = x.compute_dtype
    B, T, HQ, D = x.q.shape
    dev = x.q.device
    neg = torch.finfo(f).min
    ch = prepare(x.q, x.k, x.v, x.w, x.beta, x.g, x.key_valid, chunk_size, f)
    q, k_end, v, Gc, key_ok = ch.q, ch.k, ch.v, ch.G, ch.key_ok
    H, n, group, c = q.shape[1:5]
    transform = ch.transform
    qk_intra = ch.intra
    if transform:
        w, TW = ch.w, ch.TW

    soft = _OnlineSoftmax((B, H, n, group, c), D, f, dev)
    causal = torch.ones(c, c, dtype=torch.bool, device=dev).tril()
    s = x.scale * qk_intra
    if x.g is not None:
        s = s + x.gate_scale * (Gc[..., :, None] - Gc[..., None, :])
    soft.add(s.masked_fill(~(causal & key_ok), neg), v[:, :, :, None])

    if x.g is not None:  # a query's decay to the end of the key chunk being walked (chunks.py, "Gates")
        decay = Gc.clone()
        chunk_total = Gc[..., -1:]
        key_to_end = chunk_total - Gc
    for off in range(1, n):  # key chunk j = i - off for every query block i >= off
        qi = q[:, :, off:]
        s = x.scale * (qi @ k_end[:, :, :n - off, None].transpose(-1, -2))
        if x.g is not None:
            s = s + x.gate_scale * (decay[:, :, off:, :, :, None] + key_to_end[:, :, :n - off, :, None, :])
            decay[:, :, off:] += chunk_total[:, :, :n - off]
        soft.add(s.masked_fill(~key_ok[:, :, :n - off], neg), v[:, :, :n - off, None], slice(off, None))
        if transform:
            q[:, :, off:] = qi - (qi @ w[:, :, :n - off, None].transpose(-1, -2)) @ TW[:, :, :n - off, None]

    if past is not None and past.length:
        _attend_cache(soft, q, x, past, decay if x.g is not None else None, f, neg)

    out = soft.result().movedim(3, 4).flatten(2, 3)[:, :, :T]      # [B, H, T, group, D]
    out = out.movedim(1, 2).flatten(2, 3).to(x.q.dtype)
    if not build_state:
        return out, None
    return out, next_state(x, past, ch if transform else None)


def _attend_cache(soft: _OnlineSoftmax, q: torch.Tensor, x: AttentionInputs, past: KVState, decay, f, neg) -> None:
    """Plain attention of the fully transformed queries against the (transported) cached keys;
    `decay` [B, H, N, group, C] is each query's sum of log gates back to the segment start."""
    B, H, n, group, c, D = q.shape
    rows = q.reshape(B, H, n * group * c, D)
    for start in range(0, past.length, CACHE_BLOCK):
        stop = min(start + CACHE_BLOCK, past.length)
        kc = past.k[:, start:stop].to(f).movedim(1, 2)           # [B, H, Lb, D]
        vc = past.v[:, start:stop].to(f).movedim(1, 2)
        s = (x.scale * (rows @ kc.transpose(-1, -2))).view(B, H, n, group, c, stop - start)
        if decay is not None:
            ge = past.g_to_end[:, start:stop].to(f).movedim(1, 2).unflatten(1, (H, group))  # [B, H, group, Lb]
            s = s + x.gate_scale * (decay[..., None] + ge[:, :, None, :, None, :])
        if past.valid is not None:
            s = s.masked_fill(~past.valid[:, start:stop].view(B, 1, 1, 1, 1, -1), neg)
        soft.add(s, vc[:, :, None, None])


def next_state(x: AttentionInputs, past: KVState | None, chunks: Chunks | None) -> KVState:
    """Append the segment; for PaTH every key is transported to the new end (`transport_state`)."""
    B, T, H, D = x.k.shape
    L = 0 if past is None else past.length
    if chunks is not None:
        k_all = transport_state(chunks.transport(), None if past is None else past.k, T).movedim(1, 2)
    else:
        k_all = x.k if past is None else torch.cat([past.k, x.k], 1)
    v_all = x.v if past is None else torch.cat([past.v, x.v], 1)
    g_to_end = gate_offsets_to_end(x, past, chunks.q.dtype if chunks is not None else x.compute_dtype)
    valid = concat_valid(None if past is None else past.valid, x.key_valid, L, T, B, x.k.device)
    return KVState(k_all.contiguous(), v_all, g_to_end, valid)


register_backend("torch", attend)
