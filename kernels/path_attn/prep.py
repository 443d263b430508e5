"""Triton preparation of a PaTH segment: what `chunks.prepare` (its torch reference) computes, in one
program per (chunk, batch x key head), so the forward's fixed cost is one pass over q, k and w.

Per chunk of C rows, with W the chunk's w rows and A = strict_tril(diag(beta) W W^T):
  T = (I + A)^-1 diag(beta)      16-row diagonal blocks by forward substitution in float32 vector
                                 arithmetic, the blocks below by (I + N)^-1 = (I - N)(I + N^2)...
  TW = T W,  U = W^T TW          the chunk's transition: moving a query through it is r <- r - r U
  Cm = T strict_tril(W K^T),  k_end = K - Cm^T W          keys transported to their chunk end
  per query head of the group: QW = tril(Q W^T),
  intra = Q K^T - QW Cm,  q_start = Q - QW TW             in-chunk logits, queries at chunk start.
About twenty tensor-core passes of C x C x D per chunk; the first version solved with 16 full-size
tf32x3 products and ran all products as tf32x3 (about 290 passes, 2.3x the time on an H200).
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
    D: tl.constexpr, C: tl.constexpr, SUB: tl.constexpr, LOG_NB: tl.constexpr, STATE: tl.constexpr,
    PREC: tl.constexpr, GRAM_PREC: tl.constexpr, SOLVE_PREC: tl.constexpr,
):
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    ci = tl.arange(0, C)
    d = tl.arange(0, D)
    rows = n * C + ci
    # q and k stay in the input dtype too: their product is exact in float32 for 16-bit inputs (one
    # tensor-core pass); products with a float32 factor (w, and everything computed) use PREC
    w = tl.load(W + b * sw_b + h * sw_h + rows[:, None] * sw_t + d[None, :]).to(tl.float32)
    k_in = tl.load(K + b * sk_b + h * sk_h + rows[:, None] * sk_t + d[None, :])
    k = k_in.to(tl.float32)
    beta = tl.load(BETA + b * sb_b + h * sb_h + rows * sb_t).to(tl.float32)
    strict = ci[:, None] > ci[None, :]
    A = tl.where(strict, tl.dot(w, tl.trans(w), input_precision=GRAM_PREC) * beta[:, None], 0.0)

    # X = (I + A)^-1. Diagonal blocks of SUB rows first, by forward substitution in float32 vector
    # arithmetic (all blocks at once, a row of each per step). The rows of A are read back from
    # memory, from this chunk's first in-chunk-logits tile (written over below), which hands each
    # step its row in the layout the product wants instead of extracting it from registers.
    NB: tl.constexpr = C // SUB
    nb = tl.arange(0, NB)
    r = tl.arange(0, SUB)
    a_tile = S + b * ss_b + h * ss_h + n * ss_n
    tl.store(a_tile + ci[:, None] * C + ci[None, :], A)
    tl.debug_barrier()
    X_diag = tl.zeros([NB, SUB, SUB], tl.float32)
    for i in range(SUB):
        a_i = tl.load(a_tile + (nb * SUB + i)[:, None] * C + (nb * SUB)[:, None] + r[None, :])  # row i of each block
        x_i = tl.where((r == i)[None, :], 1.0, 0.0) - tl.sum(a_i[:, :, None] * X_diag, axis=1)
        X_diag = tl.where((r == i)[None, :, None], x_i[:, None, :], X_diag)
    tl.debug_barrier()  # every row read before the tile is overwritten
    same = (nb[:, None] == nb[None, :])[:, :, None, None]
    Xb = tl.reshape(tl.permute(tl.where(same, X_diag[:, None, :, :], 0.0), [0, 2, 1, 3]), [C, C])
    # ... then the blocks below: I + A = Db (I + N) with N = Db^-1 L strictly block-lower (N^NB = 0),
    # so X = (I + N)^-1 Db^-1 = (I - N)(I + N^2)(I + N^4)... Xb
    blk = ci // SUB
    N = tl.dot(Xb, tl.where(blk[:, None] > blk[None, :], A, 0.0), input_precision=SOLVE_PREC)
    X = Xb - tl.dot(N, Xb, input_precision=SOLVE_PREC)
    for _ in tl.static_range(LOG_NB - 1):
        N = tl.dot(N, N, input_precision=SOLVE_PREC)
        X += tl.dot(N, X, input_precision=SOLVE_PREC)
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
        q_in = tl.load(Q + b * sq_b + hq * sq_h + rows[:, None] * sq_t + d[None, :])
        q = q_in.to(tl.float32)
        qw = tl.where(upto, tl.dot(q, tl.trans(w), input_precision=PREC), 0.0)
        intra = tl.dot(q_in, tl.trans(k_in), input_precision=PREC) - tl.dot(qw, Cm, input_precision=PREC)
        q_start = q - tl.dot(qw, TW, input_precision=PREC)
        tl.store(S + b * ss_b + h * ss_h + n * ss_n + gi * ss_g + ci[:, None] * C + ci[None, :], intra)
        tl.store(QS + b * sqs_b + h * sqs_h + n * sqs_n + gi * sqs_g + ci[:, None] * D + d[None, :], q_start)


def prepare_path(q, k, w, beta, chunk_size: int, state: bool) -> Prepared:
    """q [B, T, HQ, D]; k, w [B, T, H, D]; beta [B, T, H] zero at padding; T a multiple of chunk_size.
    The kernel for 16-bit inputs and for float32 up to D = 64; float32 above that goes to the torch
    preparation (float32 products at D = 128 need tf32x3's split operands, more shared memory than
    an H200 has, or plain float32 arithmetic, ten times slower than torch's GEMMs)."""
    if q.shape[-1] <= 64 or q.dtype != torch.float32:
        return prepare_path_triton(q, k, w, beta, chunk_size, state)
    ch = prepare(q, k, None, w, beta, None, None, chunk_size, torch.float32)
    tr = ch.transport()
    return Prepared(ch.q, ch.intra, tr.k_end.to(q.dtype).flatten(2, 3), tr.U.to(q.dtype), tr if state else None)


def prepare_path_triton(q, k, w, beta, chunk_size: int, state: bool) -> Prepared:
    """The kernel. Products with a float32 factor run in float32 accuracy for float32 inputs ("tf32x3",
    three tf32 tensor-core passes, up to D = 64; plain float32 above) and as one tf32 pass for 16-bit
    inputs, whose outputs are rounded to 16 bits anyway; W W^T and the UT solve always in float32
    accuracy (the solve amplifies errors in A where beta is near 2)."""
    B, T, HQ, D = q.shape
    H = k.shape[2]
    group = HQ // H
    C = chunk_size
    if C not in (16, 32, 64):
        raise ValueError(f"the preparation kernel takes chunks of 16, 32 or 64 rows, not {C}")
    n = T // C
    dev = q.device
    exact = "tf32x3" if D <= 64 else "ieee"  # tf32x3's split D-wide operands overflow shared memory at D = 128
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
        D=D, C=C, SUB=16, LOG_NB=max(1, (C // 16).bit_length() - 1), STATE=state,
        PREC=exact if q.dtype == torch.float32 else "tf32", GRAM_PREC=exact, SOLVE_PREC="tf32x3",
        num_warps=4 if D <= 64 else 8,  # measured best on an H200 (2, 8, 16 warps: 1.9-11x slower at D = 64)
    )
    return Prepared(qs, intra, k_end.flatten(2, 3), U, Transport(k32, U32) if state else None)
