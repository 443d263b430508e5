"""The `torch` backend: PaTH / FoX / plain attention in chunks, O(T x chunk) memory, any device.

The segment is cut into chunks of C tokens. Per chunk (all chunks at once), with W the chunk's
w rows and A = strict_tril(diag(beta) W W^T), the UT transform T = (I + A)^-1 diag(beta) gives
    H_last ... H_first = I - W^T (T W)                        (the chunk's full product)
    C = T strict_tril(W K^T)   so   k'_b = k_b - sum_s C_sb w_s = H_last ... H_{b+1} k_b
    q'_a = q_a - sum_{s<=a} (q_a . w_s) (T W)_s = H_first ... H_a q_a
    intra logit(a, b) = q_a . k_b - sum_{b<s<=a} (q_a . w_s) C_sb.
Across chunks every query block walks the key chunks right to left, one diagonal of the block
matrix per step (all query blocks in one batched matmul): score q'.k' of the key chunk, then
q' <- q' - (q' W^T)(T W). Softmax is online (running max, sum, weighted values), so nothing of
size T x T exists. After the walk q' = H_first ... H_a q_a, which is exactly what cached keys
(transported to the cache end) need: the cache is plain attention, in key blocks.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from path_eval.models.attention.inputs import AttentionInputs, KVState, concat_valid, gate_offsets_to_end

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


def _chunked(t: torch.Tensor, n: int, c: int) -> torch.Tensor:
    """[B, T, H, ...] -> [B, H, N, C, ...], zero-padded at the end to N * C."""
    t = t.movedim(1, 2)
    pad = n * c - t.shape[2]
    if pad:
        t = F.pad(t, (0, 0) * (t.dim() - 3) + (0, pad))
    return t.unflatten(2, (n, c))


def attend(x: AttentionInputs, past: KVState | None, build_state: bool,
           chunk_size: int = CHUNK) -> tuple[torch.Tensor, KVState | None]:
    x = x.without_padding_effects()
    f = x.compute_dtype
    B, T, HQ, D = x.q.shape
    H = x.k.shape[2]
    group = HQ // H
    dev = x.q.device
    c = max(1, min(chunk_size, T))
    n = -(-T // c)
    neg = torch.finfo(f).min

    # Queries grouped under their kv head: [B, H, N, group, C, D].
    q = _chunked(x.q.to(f).unflatten(2, (H, group)), n, c).movedim(4, 3)
    k = _chunked(x.k.to(f), n, c)                                   # [B, H, N, C, D]
    v = _chunked(x.v.to(f), n, c)
    valid = torch.arange(n * c, device=dev) < T                     # end padding of the last chunk
    key_ok = valid.view(1, 1, n, 1, 1, c)
    if x.key_valid is not None:
        key_ok = key_ok & F.pad(x.key_valid, (0, n * c - T)).view(B, 1, n, 1, 1, c)

    transform = x.w is not None
    if transform:
        w = _chunked(x.w.to(f), n, c)
        beta = _chunked(x.beta.to(f), n, c)                        # [B, H, N, C]
        eye = torch.eye(c, dtype=f, device=dev)
        A = ((beta[..., None] * w) @ w.transpose(-1, -2)).tril(-1)
        T_ut = torch.linalg.solve_triangular(eye + A, torch.diag_embed(beta), upper=False, unitriangular=True)
        TW = T_ut @ w                                              # rows y_s of the WY form
        Cmat = T_ut @ (w @ k.transpose(-1, -2)).tril(-1)
        k_end = k - Cmat.transpose(-1, -2) @ w                     # keys transported to their chunk end
        qw = (q @ w[:, :, :, None].transpose(-1, -2)).tril()       # [B, H, N, group, C, C], s <= a
        qk_intra = q @ k[:, :, :, None].transpose(-1, -2) - qw @ Cmat[:, :, :, None]
        q = q - qw @ TW[:, :, :, None]
    else:
        k_end = k
        qk_intra = q @ k[:, :, :, None].transpose(-1, -2)

    if x.g is not None:
        G = x.g.to(f).cumsum(1)
        Gc = _chunked(G.unflatten(2, (H, group)), n, c).movedim(4, 3)  # [B, H, N, group, C]

    soft = _OnlineSoftmax((B, H, n, group, c), D, f, dev)
    causal = torch.ones(c, c, dtype=torch.bool, device=dev).tril()
    s = x.scale * qk_intra
    if x.g is not None:
        s = s + x.gate_scale * (Gc[..., :, None] - Gc[..., None, :])
    soft.add(s.masked_fill(~(causal & key_ok), neg), v[:, :, :, None])

    for off in range(1, n):  # key chunk j = i - off for every query block i >= off
        qi = q[:, :, off:]
        s = x.scale * (qi @ k_end[:, :, :n - off, None].transpose(-1, -2))
        if x.g is not None:
            s = s + x.gate_scale * (Gc[:, :, off:, :, :, None] - Gc[:, :, :n - off, :, None, :])
        soft.add(s.masked_fill(~key_ok[:, :, :n - off], neg), v[:, :, :n - off, None], slice(off, None))
        if transform:
            q[:, :, off:] = qi - (qi @ w[:, :, :n - off, None].transpose(-1, -2)) @ TW[:, :, :n - off, None]

    if past is not None and past.length:
        _attend_cache(soft, q, x, past, Gc if x.g is not None else None, f, neg)

    out = soft.result().movedim(3, 4).flatten(2, 3)[:, :, :T]      # [B, H, T, group, D]
    out = out.movedim(1, 2).flatten(2, 3).to(x.q.dtype)
    if not build_state:
        return out, None
    state = _next_state(x, past, f, transform, k_end if transform else None,
                        w if transform else None, TW if transform else None, n, c)
    return out, state


def _attend_cache(soft: _OnlineSoftmax, q: torch.Tensor, x: AttentionInputs, past: KVState, Gc, f, neg) -> None:
    """Plain attention of the fully transformed queries against the (transported) cached keys."""
    B, H, n, group, c, D = q.shape
    rows = q.reshape(B, H, n * group * c, D)
    for start in range(0, past.length, CACHE_BLOCK):
        stop = min(start + CACHE_BLOCK, past.length)
        kc = past.k[:, start:stop].to(f).movedim(1, 2)           # [B, H, Lb, D]
        vc = past.v[:, start:stop].to(f).movedim(1, 2)
        s = (x.scale * (rows @ kc.transpose(-1, -2))).view(B, H, n, group, c, stop - start)
        if Gc is not None:
            ge = past.g_to_end[:, start:stop].to(f).movedim(1, 2).unflatten(1, (H, group))  # [B, H, group, Lb]
            s = s + x.gate_scale * (Gc[..., None] + ge[:, :, None, :, None, :])
        if past.valid is not None:
            s = s.masked_fill(~past.valid[:, start:stop].view(B, 1, 1, 1, 1, -1), neg)
        soft.add(s, vc[:, :, None, None])


def _next_state(x: AttentionInputs, past: KVState | None, f, transform: bool, k_end, w, TW, n: int, c: int) -> KVState:
    """Append the segment; for PaTH carry every key through the remaining chunk products."""
    B, T, H, D = x.k.shape
    L = 0 if past is None else past.length
    if transform:
        keys = torch.empty(B, H, L + n * c, D, dtype=f, device=x.k.device)
        if L:
            keys[:, :, :L] = past.k.to(f).movedim(1, 2)
        for i in range(n):  # cache so far <- P_i cache so far; then append chunk i's keys
            end = L + i * c
            if end:
                held = keys[:, :, :end]
                keys[:, :, :end] = held - (held @ TW[:, :, i].transpose(-1, -2)) @ w[:, :, i]
            keys[:, :, end:end + c] = k_end[:, :, i]
        k_all = keys[:, :, :L + T].movedim(1, 2)
    else:
        k_all = x.k if past is None else torch.cat([past.k, x.k], 1)
    v_all = x.v if past is None else torch.cat([past.v, x.v], 1)
    g_to_end = gate_offsets_to_end(x, past, f)
    valid = concat_valid(None if past is None else past.valid, x.key_valid, L, T, B, x.k.device)
    return KVState(k_all.contiguous(), v_all, g_to_end, valid)
