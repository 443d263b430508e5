"""Triton preparation of a PaTH segment: what `chunks.prepare` (its torch reference) computes, in one
program per (chunk, batch x key head), so the forward's fixed cost is one pass over q, k and w.

Per chunk of C rows, with W the chunk's w rows and A = strict_tril(diag(beta) W W^T):
  T = (I + A)^-1 diag(beta)      blocked forward substitution (blocks of 16) in float32
  TW = T W,  U = W^T TW          the chunk's transition: moving a query through it is r <- r - r U
  Cm = T strict_tril(W K^T),  k_end = K - Cm^T W          keys transported to their chunk end
  per query head of the group: QW = tril(Q W^T),
  intra = Q K^T - QW Cm,  q_start = Q - QW TW             in-chunk logits, queries at chunk start.
The products use "tf32x3" (three tf32 passes: float32 accuracy on tensor cores) up to D = 64 and
plain float32 above; the interpreter computes them in plain float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from path_eval.kernels.path_attn.chunks import Transport, prepare


@dataclass
class Prepared:
    """Inputs of the forward: q [B, H, N, group, C, D] and intra [B, H, N, group, C, C] in float32,
    k [B, H, T, D] and U [B, H, N, D, D] in the input dtype; transport (float32 keys at their chunk
    end and transitions, for moving a cache) only when asked for."""

    q: torch.Tensor
    intra: torch.Tensor
    k: torch.Tensor
    U: torch.Tensor
    transport: Transport | None


@triton.jit
def _path_prepare(
    Q, K, W, BETA, QS, S, KE, UO, KE32, U32,
    H, GROUP,
    sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sw_b, sw_t, sw_h, sb_b, sb_t, sb_h,
    sqs_b, sqs_h, sqs_n, sqs_g, ss_b, ss_h, ss_n, ss_g, ske_b, ske_h, ske_n, su_b, su_h, su_n,
    D: tl.constexpr, C: tl.constexpr, SUB: tl.constexpr, STATE: tl.constexpr, PREC: tl.constexpr,
):
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    ci = tl.arange(0, C)
    d = tl.arange(0, D)
    rows = n * C + ci
    w = tl.load(W + b * sw_b + h * sw_h + rows[:, None] * sw_t + d[None, :]).to(tl.float32)
    k = tl.load(K + b * sk_b + h * sk_h + rows[:, None] * sk_t + d[None, :]).to(tl.float32)
    beta = tl.load(BETA + b * sb_b + h * sb_h + rows * sb_t).to(tl.float32)
    strict = ci[:, None] > ci[None, :]
    A = tl.where(strict, tl.dot(w, tl.trans(w), input_precision=PREC) * beta[:, None], 0.0)

    # X = (I + A)^-1 by blocked forward substitution. The diagonal blocks of SUB rows all at once,
    # a row of each per step: X_r = e_r - sum_{j<r, same block} A_rj X_j (later rows still zero).
    blk = ci // SUB
    eye = tl.where(ci[:, None] == ci[None, :], 1.0, 0.0)
    A_diag = tl.where(blk[:, None] == blk[None, :], A, 0.0)
    X = tl.zeros([C, C], tl.float32)
    for i in range(SUB):
        X = tl.where((ci % SUB == i)[:, None], eye - tl.dot(A_diag, X, input_precision=PREC), X)
    # then block row r: X_r,<r = -X_rr sum_{k<r} A_rk X_k,<r (block rows above are final)
    for r in tl.static_range(1, C // SUB):
        in_r = blk == r
        below = tl.dot(tl.where(in_r[:, None] & (blk < r)[None, :], A, 0.0), X, input_precision=PREC)
        X -= tl.dot(tl.where(in_r[:, None] & in_r[None, :], X, 0.0), below, input_precision=PREC)
    Tm = X * beta[None, :]                                   # T = (I + A)^-1 diag(beta)

    TW = tl.dot(Tm, w, input_precision=PREC)
    U = tl.dot(tl.trans(w), TW, input_precision=PREC)    # stored at once: D x D is the largest tile
    u_ptrs = b * su_b + h * su_h + n * su_n + d[:, None] * D + d[None, :]
    tl.store(UO + u_ptrs, U.to(UO.dtype.element_ty))
    if STATE:
        tl.store(U32 + u_ptrs, U)

    Cm = tl.dot(Tm, tl.where(strict, tl.dot(w, tl.trans(k), input_precision=PREC), 0.0), input_precision=PREC)
    k_end = k - tl.dot(tl.trans(Cm), w, input_precision=PREC)
    ke_ptrs = b * ske_b + h * ske_h + n * ske_n + ci[:, None] * D + d[None, :]
    tl.store(KE + ke_ptrs, k_end.to(KE.dtype.element_ty))
    if STATE:
        tl.store(KE32 + ke_ptrs, k_end)

    upto = ci[:, None] >= ci[None, :]
    for gi in range(GROUP):
        hq = h * GROUP + gi
        q = tl.load(Q + b * sq_b + hq * sq_h + rows[:, None] * sq_t + d[None, :]).to(tl.float32)
        qw = tl.where(upto, tl.dot(q, tl.trans(w), input_precision=PREC), 0.0)
        intra = tl.dot(q, tl.trans(k), input_precision=PREC) - tl.dot(qw, Cm, input_precision=PREC)
        q_start = q - tl.dot(qw, TW, input_precision=PREC)
        tl.store(S + b * ss_b + h * ss_h + n * ss_n + gi * ss_g + ci[:, None] * C + ci[None, :], intra)
        tl.store(QS + b * sqs_b + h * sqs_h + n * sqs_n + gi * sqs_g + ci[:, None] * D + d[None, :], q_start)


def prepare_path(q, k, w, beta, chunk_size: int, state: bool) -> Prepared:
    """q [B, T, HQ, D]; k, w [B, T, H, D]; beta [B, T, H] zero at padding; T a multiple of chunk_size.
    The kernel up to D = 64; above it the torch preparation, which the H200 runs ten times faster
    than this kernel in plain float32 (about 20 against 227 ms per 64K tokens of 16 heads)."""
    if q.shape[-1] <= 64:
        return prepare_path_triton(q, k, w, beta, chunk_size, state)
    ch = prepare(q, k, None, w, beta, None, None, chunk_size, torch.float32)
    tr = ch.transport()
    return Prepared(ch.q, ch.intra, tr.k_end.to(q.dtype).flatten(2, 3), tr.U.to(q.dtype), tr if state else None)


def prepare_path_triton(q, k, w, beta, chunk_size: int, state: bool, precision: str | None = None) -> Prepared:
    """The kernel. `precision` is Triton's for the float32 products: by default "tf32x3" up to D = 64
    and "ieee" above (tf32x3's split operands need 295 KB of shared memory at D = 128, over an
    H200's 227 KB)."""
    precision = precision or ("tf32x3" if q.shape[-1] <= 64 else "ieee")
    B, T, HQ, D = q.shape
    H = k.shape[2]
    group = HQ // H
    C = chunk_size
    n = T // C
    dev = q.device
    q, k, w = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, w))
    qs = torch.empty(B, H, n, group, C, D, dtype=torch.float32, device=dev)
    intra = torch.empty(B, H, n, group, C, C, dtype=torch.float32, device=dev)
    k_end = torch.empty(B, H, n, C, D, dtype=q.dtype, device=dev)
    U = torch.empty(B, H, n, D, D, dtype=q.dtype, device=dev)
    k32 = torch.empty(k_end.shape, dtype=torch.float32, device=dev) if state else k_end
    U32 = torch.empty(U.shape, dtype=torch.float32, device=dev) if state else U
    _path_prepare[(n, B * H)](
        q, k, w, beta, qs, intra, k_end, U, k32, U32, H, group,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        w.stride(0), w.stride(1), w.stride(2), beta.stride(0), beta.stride(1), beta.stride(2),
        qs.stride(0), qs.stride(1), qs.stride(2), qs.stride(3), intra.stride(0), intra.stride(1), intra.stride(2),
        intra.stride(3), k_end.stride(0), k_end.stride(1), k_end.stride(2), U.stride(0), U.stride(1), U.stride(2),
        D=D, C=C, SUB=min(C, 16), STATE=state, PREC=precision, num_warps=4 if D <= 64 else 8,
    )
    return Prepared(qs, intra, k_end.flatten(2, 3), U, Transport(k32, U32) if state else None)
