"""Per-chunk preparation of a PaTH / FoX segment, in torch: what both the `torch` backend and the
Triton kernels start from.

The segment is cut into chunks of C tokens. Per chunk (all chunks at once), with W the chunk's
w rows and A = strict_tril(diag(beta) W W^T), the UT transform T = (I + A)^-1 diag(beta) gives
    H_last ... H_first = I - W^T (T W)                        (the chunk's full product)
    C = T strict_tril(W K^T)   so   k'_b = k_b - sum_s C_sb w_s = H_last ... H_{b+1} k_b
    q'_a = q_a - sum_{s<=a} (q_a . w_s) (T W)_s = H_first ... H_a q_a
    intra logit(a, b) = q_a . k_b - sum_{b<s<=a} (q_a . w_s) C_sb.
Across chunks a query walks the key chunks right to left, scoring q'.k' and then moving q' through
the chunk: q' <- q' - (q' W^T)(T W). Everything here is float32 (float64 for float64 inputs): the
UT inverse needs true fp32.

Gates are cumulated inside each chunk only (`chunk_gates`), and a query's decay to an earlier key
is its in-chunk sum plus the totals of the chunks it has walked through plus the key's sum to its
chunk end. A global cumulative sum would reach thousands at 8K tokens, and G_i - G_j of two such
float32 numbers is off by a few 1e-4 in every logit; this way the error scales with the decay itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


def chunked(t: torch.Tensor, n: int, c: int) -> torch.Tensor:
    """[B, T, H, ...] -> [B, H, N, C, ...], zero-padded at the end to N * C."""
    t = t.movedim(1, 2)
    pad = n * c - t.shape[2]
    if pad:
        t = F.pad(t, (0, 0) * (t.dim() - 3) + (0, pad))
    return t.unflatten(2, (n, c))


@dataclass
class Transport:
    """What moving keys through a segment needs, float32: keys at their chunk end k_end
    [B, H, N, C, D] and per-chunk transitions U [B, H, N, D, D] (r <- r - r U moves a query)."""

    k_end: torch.Tensor
    U: torch.Tensor


@dataclass
class Chunks:
    """A segment in chunks. Shapes: q [B, H, N, group, C, D] (in-chunk transformed for PaTH),
    k [B, H, N, C, D] (transported to the chunk end for PaTH), v [B, H, N, C, D],
    intra [B, H, N, group, C, C] (raw in-chunk q.k, unscaled, unmasked), w / TW [B, H, N, C, D]
    or None, G [B, H, N, group, C] in-chunk cumulative log gates (`chunk_gates`) or None, key_ok
    broadcastable to
    [B, H, N, group, C(query), C(key)]: inside the segment and not padding."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    intra: torch.Tensor
    w: torch.Tensor | None
    TW: torch.Tensor | None
    G: torch.Tensor | None
    key_ok: torch.Tensor

    @property
    def transform(self) -> bool:
        return self.w is not None

    def transport(self) -> Transport:
        """Keys at their chunk end and per chunk U = W^T (T W)."""
        return Transport(self.k, self.w.transpose(-1, -2) @ self.TW)


def chunk_gates(g: torch.Tensor, n: int, c: int, H: int, dtype: torch.dtype) -> torch.Tensor:
    """g [B, T, HQ] log gates -> [B, H, N, group, C]: sums over [chunk start, a], per chunk."""
    return chunked(g.to(dtype).unflatten(2, (H, -1)), n, c).movedim(4, 3).cumsum(-1)


def gates_to_end(g: torch.Tensor) -> torch.Tensor:
    """g [B, T, ...] -> sum over (j, T) for every j: summed from the end, so a recent key's decay
    is not the difference of two long sums."""
    after = g[:, 1:].flip(1).cumsum(1).flip(1)
    return torch.cat([after, torch.zeros_like(g[:, :1])], 1)


def prepare(q, k, v, w, beta, g, key_valid, chunk_size: int, dtype: torch.dtype) -> Chunks:
    """Chunk a segment (q [B, T, HQ, D]; k, v, w [B, T, H, D]; beta [B, T, H]; g [B, T, HQ];
    key_valid [B, T]) whose padding is already inert (beta = 0, g = 0 there). v may be None."""
    f = dtype
    B, T, HQ, D = q.shape
    H = k.shape[2]
    group = HQ // H
    dev = q.device
    c = max(1, min(chunk_size, T))
    n = -(-T // c)
    qc = chunked(q.to(f).unflatten(2, (H, group)), n, c).movedim(4, 3)   # [B, H, N, group, C, D]
    kc = chunked(k.to(f), n, c)
    vc = None if v is None else chunked(v.to(f), n, c)   # the kernels read v where it is
    key_ok = (torch.arange(n * c, device=dev) < T).view(1, 1, n, 1, 1, c)
    if key_valid is not None:
        key_ok = key_ok & F.pad(key_valid, (0, n * c - T)).view(B, 1, n, 1, 1, c)
    G = None if g is None else chunk_gates(g, n, c, H, f)
    if w is None:
        return Chunks(qc, kc, vc, qc @ kc[:, :, :, None].transpose(-1, -2), None, None, G, key_ok)

    wc = chunked(w.to(f), n, c)
    bc = chunked(beta.to(f), n, c)                                        # [B, H, N, C]
    eye = torch.eye(c, dtype=f, device=dev)
    A = ((bc[..., None] * wc) @ wc.transpose(-1, -2)).tril(-1)
    T_ut = torch.linalg.solve_triangular(eye + A, torch.diag_embed(bc), upper=False, unitriangular=True)
    TW = T_ut @ wc                                                        # rows y_s of the WY form
    Cmat = T_ut @ (wc @ kc.transpose(-1, -2)).tril(-1)
    k_end = kc - Cmat.transpose(-1, -2) @ wc                              # keys transported to their chunk end
    qw = (qc @ wc[:, :, :, None].transpose(-1, -2)).tril()               # [B, H, N, group, C, C], s <= a
    intra = qc @ kc[:, :, :, None].transpose(-1, -2) - qw @ Cmat[:, :, :, None]
    q_start = qc - qw @ TW[:, :, :, None]
    return Chunks(q_start, k_end, vc, intra, wc, TW, G, key_ok)


def segment_transport(transport: Transport, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The segment's keys moved to its end, [B, H, T, D], and its whole product P_last ... P_first
    [B, H, D, D] (what moves older keys: k <- P k), in the transport's dtype (float32, or float64).
    Any leading dims in place of B, H (keys [..., N, C, D], U [..., N, D, D]) are batch dims.

    Dense D x D chunk products: P_i = I - U_i; chunk i's keys (already at their chunk end) go through
    the suffix S_i = P_last ... P_{i+1}. The suffixes come from a two-level scan: within groups of
    about sqrt(N) chunks (inner), then across the groups' totals (outer), and a key moves through
    its inner suffix, then its group's outer one. That is about 2N products in about 2 sqrt(N)
    launches, against N - 1 launches of one product each (a whole-segment doubling scan would do
    N log N products). Each key is rounded once, whatever N."""
    k_end = transport.k_end
    *lead, n, _, D = k_end.shape
    eye = torch.eye(D, dtype=k_end.dtype, device=k_end.device)
    size = max(1, math.isqrt(n))
    groups = -(-n // size)
    pad = groups * size - n                                        # identity chunks after the last
    P = eye - transport.U
    if pad:
        P = torch.cat([P, eye.expand(*lead, pad, D, D)], -3)
    P = P.unflatten(-3, (groups, size))                            # [..., G, S, D, D]
    inner = torch.empty_like(P)                                    # suffixes inside each group
    inner[..., size - 1, :, :] = eye
    for i in range(size - 2, -1, -1):
        inner[..., i, :, :] = inner[..., i + 1, :, :] @ P[..., i + 1, :, :]
    totals = inner[..., 0, :, :] @ P[..., 0, :, :]                 # each group's product
    del P
    outer = torch.empty_like(totals)                               # products of the later groups
    outer[..., groups - 1, :, :] = eye
    for g in range(groups - 2, -1, -1):
        outer[..., g, :, :] = outer[..., g + 1, :, :] @ totals[..., g + 1, :, :]
    keys = (F.pad(k_end, (0, 0, 0, 0, 0, pad)) if pad else k_end).unflatten(-3, (groups, size))  # [..., G, S, c, D]
    new = (keys @ inner.transpose(-1, -2)) @ outer[..., None, :, :].transpose(-1, -2)
    return new.flatten(-4, -2)[..., :T, :], outer[..., 0, :, :] @ totals[..., 0, :, :]


def naive_super_chunk_transport(transport: Transport, size: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """What the forward's coarse walk reads (`coarse.py` computes it; this is its reference), for the
    first `count` super-chunks of `size` chunks each:
    their keys moved to their super-chunk end [B, H, count * size * C, D] and per super-chunk
    U_super = I - P_last ... P_first [B, H, count, D, D] (r <- r - r U_super moves a query through
    it), in the transport's dtype. Each super-chunk is a segment of `segment_transport`'s."""
    C, D = transport.k_end.shape[-2:]
    per_super = Transport(transport.k_end[:, :, :count * size].unflatten(2, (count, size)),
                          transport.U[:, :, :count * size].unflatten(2, (count, size)))
    keys, whole = segment_transport(per_super, size * C)           # [B, H, count, size * C, D], [.., D, D]
    return keys.flatten(2, 3), torch.eye(D, dtype=whole.dtype, device=whole.device) - whole


def super_chunk_gates(g: torch.Tensor, tokens: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """g [B, T, HQ] log gates -> each key's sum to its super-chunk end (over (j, end]) [B, count, HQ, tokens]
    and each super-chunk's total [B, count, HQ], for the first `count` super-chunks of `tokens` tokens:
    summed inside each super-chunk only, never along the whole segment. Tokens innermost: the coarse
    walk reads one head's sums for a block of consecutive keys, one contiguous load."""
    per_super = g[:, :count * tokens].unflatten(1, (count, tokens))   # [B, count, tokens, HQ]
    to_end = gates_to_end(per_super.flatten(0, 1)).unflatten(0, (g.shape[0], count))
    return to_end.transpose(2, 3).contiguous(), per_super.sum(2).contiguous()


def transport_state(transport: Transport, past_k: torch.Tensor | None, T: int) -> torch.Tensor:
    """Keys of cache (past_k [B, L, H, D]) + segment transported to the segment end, [B, H, L + T, D],
    in the transport's dtype."""
    new, whole = segment_transport(transport, T)
    if past_k is None or not past_k.shape[1]:
        return new
    old = past_k.to(new.dtype).movedim(1, 2) @ whole.transpose(-1, -2)
    return torch.cat([old, new], dim=2)
