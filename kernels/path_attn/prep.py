"""Triton preparation of a PaTH segment: what `chunks.prepare` (its torch reference) computes, in two
launches: one program per (chunk, batch x key head) for the chunk's transition, then one per (chunk,
batch x query head) for its queries, so the forward's fixed cost is a pass over q and 1 + group
passes over k and w (group = query heads per key head).

Per chunk of C rows, with W the chunk's w rows and A = strict_tril(diag(beta) W W^T):
  T = (I + A)^-1 diag(beta)      16-row diagonal blocks by forward substitution in float32 vector
                                 arithmetic, the blocks below by block forward substitution
  TW = T W,  U = W^T TW          the chunk's transition: moving a query through it is r <- r - r U
  Cm = T strict_tril(W K^T),  k_end = K - Cm^T W          keys transported to their chunk end
  per query head: QW = tril(Q W^T),
  intra = Q K^T - QW Cm,  q_start = Q - QW TW             in-chunk logits, queries at chunk start.
Why two launches and a row-block solve: one kernel solving the blocks below with full-size
products, (I - N)(I + N^2) Xb, needs so much shared memory for its tf32x3 operands that one program
fits per SM and its chain of small products waits on latency; split this way the transition kernel
fits three programs per SM at D = 64 (tests/kernels/test_kernel_resources.py holds it to that).
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
def _tf32(x, ROUND: tl.constexpr):
    """float32 x rounded to tf32's 10 mantissa bits, to nearest (ties away from zero, as cvt.rna and
    the high parts of Triton's tf32x3), when ROUND. A plain tf32 product on an NVIDIA GPU keeps only
    the top 10 bits of each float32 operand: truncation, a bias toward zero that adds up along the
    chained products below, enough to push the 16-bit cache test
    (`test_half_precision_cache_through_folds`) past its bound on a GPU and, with the interpreter's
    truncation (tests/tf32_emulation.py), on the CPU. Each factor is rounded once where it is made,
    so no product needs a rounded copy of its operand: rounding inside every product is slower."""
    if ROUND:
        bits = x.to(tl.int32, bitcast=True)
        rounded = ((bits + 0x1000) & -0x2000).to(tl.float32, bitcast=True)
        x = tl.where((bits & 0x7F800000) == 0x7F800000, x, rounded)  # inf and nan as they are (0x7FFFFFFF would wrap)
    return x


@triton.jit
def _input_product(a, b, IN_PREC: tl.constexpr, PREC: tl.constexpr, ROUND: tl.constexpr):
    """a b for two loaded inputs (w w^T, w k^T, q w^T, q k^T): as they are when their dtypes match
    (exact in float32 for 16-bit inputs, IN_PREC for float32 ones), else in float32 at PREC (16-bit
    q or k against the model's float32 w), like every product with a computed float32 factor; a
    16-bit operand is exact in tf32, the float32 one is rounded."""
    if a.dtype == b.dtype:
        return tl.dot(a, b, input_precision=IN_PREC)
    return tl.dot(_tf32(a.to(tl.float32), ROUND and a.dtype == tl.float32),
                  _tf32(b.to(tl.float32), ROUND and b.dtype == tl.float32), input_precision=PREC)


@triton.jit
def _chunk_transition(
    K, W, BETA, S, KE, UO, KE32, U32, TW_OUT, CM_OUT,
    H,
    sk_b, sk_t, sk_h, sw_b, sw_t, sw_h, sb_b, sb_t, sb_h,
    ss_b, ss_h, ss_n, ske_b, ske_h, ske_n, su_b, su_h, su_n,
    D: tl.constexpr, C: tl.constexpr, SUB: tl.constexpr, STATE: tl.constexpr,
    IN_PREC: tl.constexpr, PREC: tl.constexpr, SOLVE_PREC: tl.constexpr, ROUND_TF32: tl.constexpr,
):
    """Per (chunk, batch x key head): T, T W, U, Cm and the keys at their chunk end; T W and Cm also
    go to float32 scratch [B, H, N, C, D | C] for `_chunk_queries`."""
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    ci = tl.arange(0, C)
    d = tl.arange(0, D)
    rows = n * C + ci
    scratch = (b * H + h) * tl.num_programs(0) + n          # this chunk's slot in TW_OUT and CM_OUT
    w_in = tl.load(W + b * sw_b + h * sw_h + rows[:, None] * sw_t + d[None, :])
    k_in = tl.load(K + b * sk_b + h * sk_h + rows[:, None] * sk_t + d[None, :])
    beta = tl.load(BETA + b * sb_b + h * sb_h + rows * sb_t).to(tl.float32)
    strict = ci[:, None] > ci[None, :]
    A = tl.where(strict, tl.dot(w_in, tl.trans(w_in), input_precision=IN_PREC) * beta[:, None], 0.0)

    # X = (I + A)^-1. Diagonal blocks of SUB rows first, by forward substitution in float32 vector
    # arithmetic (all blocks at once, a row of each per step). The rows of A are read back from
    # memory, from this chunk's first in-chunk-logits tile (the query kernel writes it later),
    # which hands each step its row in the layout the product wants instead of extracting it from
    # registers.
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
    same = (nb[:, None] == nb[None, :])[:, :, None, None]
    Xb = tl.reshape(tl.permute(tl.where(same, X_diag[:, None, :, :], 0.0), [0, 2, 1, 3]), [C, C])
    # ... then the blocks below, a block row at a time (block forward substitution):
    # X_ij = -D_i^-1 sum_{k<i} A_ik X_kj, as products of SUB rows; X lives in Cm's slot meanwhile
    x_tile = CM_OUT + scratch * (C * C)
    tl.store(x_tile + ci[:, None] * C + ci[None, :], Xb)
    tl.debug_barrier()
    for i in tl.static_range(1, NB):
        rows_i = i * SUB + r
        before = ci[None, :] < i * SUB
        a_i = tl.load(a_tile + rows_i[:, None] * C + ci[None, :], mask=before, other=0.0)
        x_above = tl.load(x_tile + ci[:, None] * C + ci[None, :])  # rows from block i on meet zeros of a_i
        d_inv = tl.load(x_tile + rows_i[:, None] * C + (i * SUB + r)[None, :])
        x_i = -tl.dot(d_inv, tl.dot(a_i, x_above, input_precision=SOLVE_PREC), input_precision=SOLVE_PREC)
        tl.store(x_tile + rows_i[:, None] * C + ci[None, :], x_i, mask=before)
        tl.debug_barrier()
    X = tl.load(x_tile + ci[:, None] * C + ci[None, :])
    tl.debug_barrier()  # every row of X read before Cm takes the slot
    Tm = _tf32(X * beta[None, :], ROUND_TF32)               # T = (I + A)^-1 diag(beta)

    # w again, from L2: a rounded copy made from the first load would live beside it through the solve
    w_again = tl.load(W + b * sw_b + h * sw_h + rows[:, None] * sw_t + d[None, :])
    w = _tf32(w_again.to(tl.float32), ROUND_TF32)
    TW = _tf32(tl.dot(Tm, w, input_precision=PREC), ROUND_TF32)  # rounded here: a factor of U and q_start
    U = tl.dot(tl.trans(w), TW, input_precision=PREC)    # stored at once: D x D is the largest tile
    u_ptrs = b * su_b + h * su_h + n * su_n + d[:, None] * D + d[None, :]
    tl.store(UO + u_ptrs, U.to(UO.dtype.element_ty))
    if STATE:
        tl.store(U32 + u_ptrs, U)

    wk = tl.where(strict, _input_product(w_again, tl.trans(k_in), IN_PREC, PREC, ROUND_TF32), 0.0)
    Cm = _tf32(tl.dot(Tm, _tf32(wk, ROUND_TF32), input_precision=PREC), ROUND_TF32)
    k_end = k_in.to(tl.float32) - tl.dot(tl.trans(Cm), w, input_precision=PREC)
    ke_ptrs = b * ske_b + h * ske_h + n * ske_n + ci[:, None] * D + d[None, :]
    tl.store(KE + ke_ptrs, k_end.to(KE.dtype.element_ty))
    if STATE:
        tl.store(KE32 + ke_ptrs, k_end)

    tl.store(TW_OUT + scratch * (C * D) + ci[:, None] * D + d[None, :], TW)
    tl.store(CM_OUT + scratch * (C * C) + ci[:, None] * C + ci[None, :], Cm)


@triton.jit
def _chunk_queries(
    Q, K, W, TW_IN, CM_IN, QS, S,
    HQ, GROUP,
    sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sw_b, sw_t, sw_h,
    sqs_b, sqs_h, sqs_n, sqs_g, ss_b, ss_h, ss_n, ss_g,
    D: tl.constexpr, C: tl.constexpr, IN_PREC: tl.constexpr, PREC: tl.constexpr, ROUND_TF32: tl.constexpr,
):
    """Per (chunk, batch x query head): QW = tril(Q W^T), intra = Q K^T - QW Cm, q_start = Q - QW TW."""
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // HQ).to(tl.int64)
    hq = (pid_bh % HQ).to(tl.int64)
    h = hq // GROUP
    gi = hq % GROUP
    ci = tl.arange(0, C)
    d = tl.arange(0, D)
    rows = n * C + ci
    q_in = tl.load(Q + b * sq_b + hq * sq_h + rows[:, None] * sq_t + d[None, :])
    w_in = tl.load(W + b * sw_b + h * sw_h + rows[:, None] * sw_t + d[None, :])
    k_in = tl.load(K + b * sk_b + h * sk_h + rows[:, None] * sk_t + d[None, :])
    scratch = (b * (HQ // GROUP) + h) * tl.num_programs(0) + n
    qw = tl.where(ci[:, None] >= ci[None, :], _input_product(q_in, tl.trans(w_in), IN_PREC, PREC, ROUND_TF32), 0.0)
    qw = _tf32(qw, ROUND_TF32)
    Cm = tl.load(CM_IN + scratch * (C * C) + ci[:, None] * C + ci[None, :])  # T W and Cm come rounded
    intra = tl.dot(q_in, tl.trans(k_in), input_precision=IN_PREC) - tl.dot(qw, Cm, input_precision=PREC)
    tl.store(S + b * ss_b + h * ss_h + n * ss_n + gi * ss_g + ci[:, None] * C + ci[None, :], intra)
    TW = tl.load(TW_IN + scratch * (C * D) + ci[:, None] * D + d[None, :])
    q_start = q_in.to(tl.float32) - tl.dot(qw, TW, input_precision=PREC)
    tl.store(QS + b * sqs_b + h * sqs_h + n * sqs_n + gi * sqs_g + ci[:, None] * D + d[None, :], q_start)


def _transition_launch(head_dim: int) -> dict:
    """Warps and register cap of the transition kernel, the fastest of those timed on an H200
    (8 x 8K tokens, bf16): at D <= 64, 4 warps capped at 168 registers, so that three programs share
    an SM (faster than uncapped, than a cap of 128 and than 8 warps); at D = 128, 8 warps uncapped
    (a cap of 168 is slower there)."""
    return dict(num_warps=4, maxnreg=168) if head_dim <= 64 else dict(num_warps=8)


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
    """The kernels. Products with a float32 factor run in float32 accuracy for float32 inputs
    ("tf32x3", three tf32 tensor-core passes, up to D = 64; plain float32 above) and as one tf32 pass
    for 16-bit inputs, whose float32 factors are rounded to tf32 first (`_tf32`): k_end and U are
    rounded to 16 bits anyway, and a rounded tf32 pass keeps the float32 queries, logits and
    transport state within the 16-bit tests' bounds (kernels/README.md, "Precision"). W W^T
    and the UT solve always run in float32 accuracy (the solve amplifies errors in A where beta is
    near 2)."""
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
    tw = torch.empty(B, H, n, C, D, dtype=torch.float32, device=dev)
    cm = torch.empty(B, H, n, C, C, dtype=torch.float32, device=dev)
    in_prec, prec = exact, exact if q.dtype == torch.float32 else "tf32"
    round_tf32 = prec == "tf32" and torch.version.hip is None  # tf32 is NVIDIA's (and the interpreter's)
    _chunk_transition[(n, B * H)](
        k, w, beta, intra, k_end, U, k32, U32, tw, cm, H,
        k.stride(0), k.stride(1), k.stride(2), w.stride(0), w.stride(1), w.stride(2),
        beta.stride(0), beta.stride(1), beta.stride(2), intra.stride(0), intra.stride(1), intra.stride(2),
        k_end.stride(0), k_end.stride(1), k_end.stride(2), U.stride(0), U.stride(1), U.stride(2),
        D=D, C=C, SUB=16, STATE=state, IN_PREC=in_prec, PREC=prec, SOLVE_PREC="tf32x3", ROUND_TF32=round_tf32,
        **_transition_launch(D),
    )
    _chunk_queries[(n, B * HQ)](
        q, k, w, tw, cm, qs, intra, HQ, group,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        w.stride(0), w.stride(1), w.stride(2), qs.stride(0), qs.stride(1), qs.stride(2), qs.stride(3),
        intra.stride(0), intra.stride(1), intra.stride(2), intra.stride(3),
        D=D, C=C, IN_PREC=in_prec, PREC=prec, ROUND_TF32=round_tf32, num_warps=4,
    )
    return Prepared(qs, intra, k_end.flatten(2, 3), U, Transport(k32, U32) if state else None)
