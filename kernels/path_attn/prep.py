"""Triton preparation of a PaTH segment: what `chunks.prepare` (its torch reference) computes, in two
launches: one program per (chunk, batch x key head) for the chunk's transition, then one per (chunk,
batch x query head) for its queries, so the forward's fixed cost is a pass over q and 1 + group
passes over k and w (group = query heads per key head).

Per chunk of C rows, with W the chunk's w rows and A = strict_tril(diag(beta) W W^T):
  T = (I + A)^-1 diag(beta)      16-row diagonal blocks by the recursive block inverse (batched
                                 products), the blocks below by block forward substitution
  TW = T W,  U = W^T TW          the chunk's transition: moving a query through it is r <- r - r U
  Cm = T strict_tril(W K^T),  k_end = K - Cm^T W          keys transported to their chunk end
  per query head: QW = tril(Q W^T),
  intra = Q K^T - QW Cm,  q_start = Q - QW TW             in-chunk logits, queries at chunk start.
Why two launches and a row-block solve: one kernel solving the blocks below with full-size
products, (I - N)(I + N^2) Xb, needs so much shared memory for its tf32x3 operands that one program
fits per SM and its chain of small products waits on latency; split this way the transition kernel
fits three programs per SM at D = 64 (tests/kernels/test_kernel_resources.py holds it to that).
Tiles D wide are made, and products over D accumulated, 64 columns at a time (`column_block`), so
D = 128 runs in the registers of D = 64 and float32 inputs take tf32x3 at every D.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from path_eval.kernels.path_attn.chunks import Transport


@dataclass
class Prepared:
    """Inputs of the forward: q [B, H, N, group, C, D] and intra [B, H, N, group, C, C] in float32,
    k [B, H, T, D] and U [B, H, N, D, D] in the input dtype; transport (float32 keys at their chunk
    end and transitions, for moving a cache) only when asked for; for the coarse walk's super-chunk
    transport, when asked for, the float32 keys at their chunk end k32 and rows of T W tw, both
    [B, H, N, C, D] (what `chunks.Chunks` calls k and TW)."""

    q: torch.Tensor
    intra: torch.Tensor
    k: torch.Tensor
    U: torch.Tensor
    transport: Transport | None
    k32: torch.Tensor | None = None
    tw: torch.Tensor | None = None


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
def _block_row(x_tile, a_tile, i: tl.constexpr, x0, x1, x2, C: tl.constexpr, SUB: tl.constexpr,
               SOLVE_PREC: tl.constexpr):
    """Block row i (1 to 3) of X = (I + A)^-1, SUB x C, from the block rows above it, x0 to x_{i-1}
    (later arguments unused), and x_tile holding Xb (the inverted diagonal blocks D_k^-1): Xb's row i
    minus D_i^-1 sum_k A_ik x_k, whose columns from block i on are exact zeros."""
    r = tl.arange(0, SUB)
    ci = tl.arange(0, C)
    rows_i = i * SUB + r
    acc = tl.dot(tl.load(a_tile + rows_i[:, None] * C + r[None, :]), x0, input_precision=SOLVE_PREC)
    if i > 1:
        acc = tl.dot(tl.load(a_tile + rows_i[:, None] * C + (SUB + r)[None, :]), x1, acc, input_precision=SOLVE_PREC)
    if i > 2:
        acc = tl.dot(tl.load(a_tile + rows_i[:, None] * C + (2 * SUB + r)[None, :]), x2, acc, input_precision=SOLVE_PREC)
    d_inv = tl.load(x_tile + rows_i[:, None] * C + (i * SUB + r)[None, :])
    return tl.load(x_tile + rows_i[:, None] * C + ci[None, :]) - tl.dot(d_inv, acc, input_precision=SOLVE_PREC)


@triton.jit
def _chunk_transition(
    K, W, BETA, A_SCRATCH, KE, UO, KE32, U32, TW_OUT, CM_OUT,
    H, a_slot,
    sk_b, sk_t, sk_h, sw_b, sw_t, sw_h, sb_b, sb_t, sb_h,
    ske_b, ske_h, ske_n, su_b, su_h, su_n,
    D: tl.constexpr, C: tl.constexpr, SUB: tl.constexpr, DB: tl.constexpr, STATE: tl.constexpr,
    KEYS32: tl.constexpr, IN_PREC: tl.constexpr, PREC: tl.constexpr, SOLVE_PREC: tl.constexpr,
    ROUND_TF32: tl.constexpr,
):
    """Per (chunk, batch x key head): T, T W, U, Cm and the keys at their chunk end; T W and Cm also
    go to float32 scratch [B, H, N, C, D | C] for `_chunk_queries` (and T W for the coarse walk).
    What is D wide (T W, the moved keys, U) is made DB columns at a time and stored at once, so that
    at D = 128 no D-wide float32 tile lives beside another: one program holding T W, w and U whole
    needs 255 registers and spills 1.8 KB at 8 warps (one program per SM)."""
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    ci = tl.arange(0, C)
    rows = n * C + ci
    scratch = (b * H + h) * tl.num_programs(0) + n          # this chunk's slot in TW_OUT, CM_OUT and A_SCRATCH
    w_rows = W + b * sw_b + h * sw_h + rows[:, None] * sw_t
    k_rows = K + b * sk_b + h * sk_h + rows[:, None] * sk_t
    beta = tl.load(BETA + b * sb_b + h * sb_h + rows * sb_t).to(tl.float32)
    strict = ci[:, None] > ci[None, :]
    A = tl.zeros([C, C], tl.float32)
    for c in tl.static_range(D // DB):
        w_c = tl.load(w_rows + (c * DB + tl.arange(0, DB))[None, :])
        A += tl.dot(w_c, tl.trans(w_c), input_precision=IN_PREC)
    A = tl.where(strict, A * beta[:, None], 0.0)

    # X = (I + A)^-1. Diagonal blocks of SUB rows first, all at once, by the recursive block
    # inverse: with X the inverse of its diagonal blocks of size h, X - X M X inverts its blocks of
    # size 2h, M holding A's entries inside those but outside the blocks of size h (the 2 x 2 block
    # formula [[X11, 0], [-X22 A21 X11, X22]] for every pair at once); h = 1 needs no product, h = 2,
    # 4, 8 two each: six batched tf32x3 products one after another, where forward substitution takes
    # 16 dependent vector steps (timed with the block rows below against it in
    # results/bench/trials/transition_candidates_h200.json), and like it within 1e-4 of float64 on
    # ill-conditioned I + A (the correlated-w tests). The doubling product (I - A)(I + A^2)(I + A^4)
    # (I + A^8), a little faster, is not: powers of A grow without bound there. The blocks of A come
    # from this chunk's slot of A_SCRATCH (a C x C tile `a_slot` elements apart per chunk, in a
    # buffer written for good later), in the layout the products want.
    tl.static_assert(SUB == 16, "the recursive block inverse below has four levels: 16-row blocks")
    NB: tl.constexpr = C // SUB
    nb = tl.arange(0, NB)
    r = tl.arange(0, SUB)
    a_tile = A_SCRATCH + scratch * a_slot
    tl.store(a_tile + ci[:, None] * C + ci[None, :], A)
    tl.debug_barrier()
    in_row = r[None, :, None]
    in_col = r[None, None, :]
    a_diag = tl.load(a_tile + (nb[:, None, None] * SUB + in_row) * C + nb[:, None, None] * SUB + in_col)
    X_diag = tl.where(in_row == in_col, 1.0, 0.0) - tl.where(in_row // 2 == in_col // 2, a_diag, 0.0)
    for level in tl.static_range(1, 4):
        M = tl.where((in_row >> (level + 1) == in_col >> (level + 1)) & (in_row >> level != in_col >> level), a_diag, 0.0)
        X_diag = X_diag - tl.dot(tl.dot(X_diag, M, input_precision=SOLVE_PREC), X_diag, input_precision=SOLVE_PREC)
    same = (nb[:, None] == nb[None, :])[:, :, None, None]
    Xb = tl.reshape(tl.permute(tl.where(same, X_diag[:, None, :, :], 0.0), [0, 2, 1, 3]), [C, C])
    # ... then the blocks below, a block row at a time (block forward substitution):
    # X_i = -D_i^-1 sum_{k<i} A_ik X_k, each block row X_k held in registers from its own step, so no
    # step waits on a store and reload of X; X lives in Cm's slot meanwhile
    x_tile = CM_OUT + scratch * (C * C)
    tl.store(x_tile + ci[:, None] * C + ci[None, :], Xb)
    tl.debug_barrier()
    x0 = tl.load(x_tile + r[:, None] * C + ci[None, :])
    if NB > 1:
        x1 = _block_row(x_tile, a_tile, 1, x0, x0, x0, C, SUB, SOLVE_PREC)
        tl.store(x_tile + (SUB + r)[:, None] * C + ci[None, :], x1)
    if NB > 2:
        x2 = _block_row(x_tile, a_tile, 2, x0, x1, x1, C, SUB, SOLVE_PREC)
        tl.store(x_tile + (2 * SUB + r)[:, None] * C + ci[None, :], x2)
        x3 = _block_row(x_tile, a_tile, 3, x0, x1, x2, C, SUB, SOLVE_PREC)
        tl.store(x_tile + (3 * SUB + r)[:, None] * C + ci[None, :], x3)
    tl.debug_barrier()
    X = tl.load(x_tile + ci[:, None] * C + ci[None, :])
    tl.debug_barrier()  # every row of X read before Cm takes the slot
    Tm = _tf32(X * beta[None, :], ROUND_TF32)               # T = (I + A)^-1 diag(beta)

    # w and k again, from L2: copies loaded before the solve would live through it
    wk = tl.zeros([C, C], tl.float32)
    for c in tl.static_range(D // DB):
        dc = c * DB + tl.arange(0, DB)
        wk += _input_product(tl.load(w_rows + dc[None, :]), tl.trans(tl.load(k_rows + dc[None, :])),
                             IN_PREC, PREC, ROUND_TF32)
    wk = tl.where(strict, wk, 0.0)
    Cm = _tf32(tl.dot(Tm, _tf32(wk, ROUND_TF32), input_precision=PREC), ROUND_TF32)
    tl.store(CM_OUT + scratch * (C * C) + ci[:, None] * C + ci[None, :], Cm)
    tw_tile = TW_OUT + scratch * (C * D)
    for c in tl.static_range(D // DB):
        dc = c * DB + tl.arange(0, DB)
        w = _tf32(tl.load(w_rows + dc[None, :]).to(tl.float32), ROUND_TF32)
        TW = _tf32(tl.dot(Tm, w, input_precision=PREC), ROUND_TF32)  # rounded here: a factor of U and q_start
        tl.store(tw_tile + ci[:, None] * D + dc[None, :], TW)
        k_end = tl.load(k_rows + dc[None, :]).to(tl.float32) - tl.dot(tl.trans(Cm), w, input_precision=PREC)
        ke_ptrs = b * ske_b + h * ske_h + n * ske_n + ci[:, None] * D + dc[None, :]
        tl.store(KE + ke_ptrs, k_end.to(KE.dtype.element_ty))
        if KEYS32:
            tl.store(KE32 + ke_ptrs, k_end)
    tl.debug_barrier()  # T W whole in scratch before its column blocks meet every row block of w
    for rb in tl.static_range(D // DB):
        dr = rb * DB + tl.arange(0, DB)
        w_r = _tf32(tl.load(w_rows + dr[None, :]).to(tl.float32), ROUND_TF32)
        for c in tl.static_range(D // DB):
            dc = c * DB + tl.arange(0, DB)
            U = tl.dot(tl.trans(w_r), tl.load(tw_tile + ci[:, None] * D + dc[None, :]), input_precision=PREC)
            u_ptrs = b * su_b + h * su_h + n * su_n + dr[:, None] * D + dc[None, :]
            tl.store(UO + u_ptrs, U.to(UO.dtype.element_ty))
            if STATE:
                tl.store(U32 + u_ptrs, U)


@triton.jit
def _chunk_queries(
    Q, K, W, TW_IN, CM_IN, QS, S,
    HQ, GROUP,
    sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sw_b, sw_t, sw_h,
    sqs_b, sqs_h, sqs_n, sqs_g, ss_b, ss_h, ss_n, ss_g,
    D: tl.constexpr, C: tl.constexpr, DB: tl.constexpr, IN_PREC: tl.constexpr, PREC: tl.constexpr,
    ROUND_TF32: tl.constexpr,
):
    """Per (chunk, batch x query head): QW = tril(Q W^T), intra = Q K^T - QW Cm, q_start = Q - QW TW
    (DB columns at a time, as in `_chunk_transition`)."""
    n = tl.program_id(0).to(tl.int64)
    pid_bh = tl.program_id(1)
    b = (pid_bh // HQ).to(tl.int64)
    hq = (pid_bh % HQ).to(tl.int64)
    h = hq // GROUP
    gi = hq % GROUP
    ci = tl.arange(0, C)
    rows = n * C + ci
    q_rows = Q + b * sq_b + hq * sq_h + rows[:, None] * sq_t
    w_rows = W + b * sw_b + h * sw_h + rows[:, None] * sw_t
    k_rows = K + b * sk_b + h * sk_h + rows[:, None] * sk_t
    scratch = (b * (HQ // GROUP) + h) * tl.num_programs(0) + n
    qw = tl.zeros([C, C], tl.float32)
    qk = tl.zeros([C, C], tl.float32)
    for c in tl.static_range(D // DB):
        dc = c * DB + tl.arange(0, DB)
        q_c = tl.load(q_rows + dc[None, :])
        qw += _input_product(q_c, tl.trans(tl.load(w_rows + dc[None, :])), IN_PREC, PREC, ROUND_TF32)
        qk += tl.dot(q_c, tl.trans(tl.load(k_rows + dc[None, :])), input_precision=IN_PREC)
    qw = _tf32(tl.where(ci[:, None] >= ci[None, :], qw, 0.0), ROUND_TF32)
    Cm = tl.load(CM_IN + scratch * (C * C) + ci[:, None] * C + ci[None, :])  # T W and Cm come rounded
    tl.debug_barrier()  # every row of Cm read before the logits take its slot (Cm may live in S)
    intra = qk - tl.dot(qw, Cm, input_precision=PREC)
    tl.store(S + b * ss_b + h * ss_h + n * ss_n + gi * ss_g + ci[:, None] * C + ci[None, :], intra)
    for c in tl.static_range(D // DB):
        dc = c * DB + tl.arange(0, DB)
        TW = tl.load(TW_IN + scratch * (C * D) + ci[:, None] * D + dc[None, :])
        q_start = tl.load(q_rows + dc[None, :]).to(tl.float32) - tl.dot(qw, TW, input_precision=PREC)
        tl.store(QS + b * sqs_b + h * sqs_h + n * sqs_n + gi * sqs_g + ci[:, None] * D + dc[None, :], q_start)


def _transition_launch() -> dict:
    """Warps and register cap of the transition kernel: 4 warps capped at 168 registers, so that
    three programs share an SM, the fastest of those timed on an H200 at D = 64 and D = 128, ahead
    of uncapped and 8 warps (results/bench/launch_configs.json). Four programs per SM, capped at 128
    registers (its spills cost more than the extra program hides) or at 2 warps, are slower."""
    return dict(num_warps=4, maxnreg=168)


def _queries_launch() -> dict:
    """Warps of the query kernel: 4 (155 registers at D = 128, three programs per SM; faster than 8 on
    an H200, and capping it at 128 registers for four programs gains nothing:
    results/bench/launch_configs.json)."""
    return dict(num_warps=4)


def product_precision(dtype: torch.dtype, accurate: bool = False) -> tuple[str, bool]:
    """(input_precision, round float32 factors to tf32 first) of the products with a computed float32
    factor, for inputs of `dtype`: tf32x3 for float32 inputs, and for 16-bit ones when `accurate`;
    else one tf32 pass, its factors rounded to nearest on NVIDIA GPUs and in the interpreter (`_tf32`;
    tf32 is NVIDIA's). One pass loses accuracy where beta is near 2 and the w rows of a chunk are
    nearly parallel: T = (I + A)^-1 diag(beta) then has large entries whose products cancel
    (benchmarks/beta_near_two.py measures both)."""
    if dtype == torch.float32 or accurate:
        return "tf32x3", False
    return "tf32", torch.version.hip is None


def column_block(head_dim: int) -> int:
    """Columns of the D-wide tiles a preparation or transport program makes at a time: all of them
    up to D = 64, 64 above (register pressure; see `_chunk_transition`)."""
    return min(head_dim, 64)


@dataclass
class Transitions:
    """The transition kernel's outputs (`chunk_transitions`), what the query kernel and the super-chunk
    transport read: intra [B, H, N, group, C, C] (written by the query kernel; until then scratch),
    T W tw and Cm cm in float32 (cm may share intra's memory, see `chunk_transitions`), keys at their
    chunk end k_end and U in the input dtype, their float32 copies k32 / U32 when asked for."""

    intra: torch.Tensor
    tw: torch.Tensor
    cm: torch.Tensor
    k_end: torch.Tensor
    U: torch.Tensor
    k32: torch.Tensor | None
    U32: torch.Tensor | None


def chunk_transitions(k, w, beta, group: int, chunk_size: int, state: bool, keys32: bool,
                      accurate: bool = False) -> Transitions:
    """The transition kernel: per chunk and key head T, T W, U, Cm and the keys at their chunk end.
    k, w [B, T, H, D] (unit stride along D), beta [B, T, H]. `state`: U in float32 too; `keys32`:
    the keys at their chunk end in float32 too (for the `Transport` or the super-chunk transport);
    `accurate`: products in float32 accuracy for 16-bit inputs too (`product_precision`). Without grouped queries and with D >= C, Cm is kept in the in-chunk-logits buffer (the one query
    program of a chunk reads it before writing its logits there) and the solve's scratch for A in
    T W's: one float32 buffer fewer, 0.375 GiB in a call of 64K tokens of 24 heads of 64."""
    B, T, H, D = k.shape
    C = chunk_size
    if C not in (16, 32, 64):
        raise ValueError(f"the preparation kernel takes chunks of 16, 32 or 64 rows, not {C}")
    n = T // C
    dev = k.device
    intra = torch.empty(B, H, n, group, C, C, dtype=torch.float32, device=dev)
    k_end = torch.empty(B, H, n, C, D, dtype=k.dtype, device=dev)
    U = torch.empty(B, H, n, D, D, dtype=k.dtype, device=dev)
    k32 = torch.empty(k_end.shape, dtype=torch.float32, device=dev) if keys32 else None
    U32 = torch.empty(U.shape, dtype=torch.float32, device=dev) if state else None
    tw = torch.empty(B, H, n, C, D, dtype=torch.float32, device=dev)
    shared = group == 1 and D >= C
    cm = intra.view(B, H, n, C, C) if shared else torch.empty(B, H, n, C, C, dtype=torch.float32, device=dev)
    a_scratch, a_slot = (tw, C * D) if shared else (intra, group * C * C)
    prec, round_tf32 = product_precision(k.dtype, accurate)
    _chunk_transition[(n, B * H)](
        k, w, beta, a_scratch, k_end, U, k_end if k32 is None else k32, U if U32 is None else U32, tw, cm, H, a_slot,
        k.stride(0), k.stride(1), k.stride(2), w.stride(0), w.stride(1), w.stride(2),
        beta.stride(0), beta.stride(1), beta.stride(2),
        k_end.stride(0), k_end.stride(1), k_end.stride(2), U.stride(0), U.stride(1), U.stride(2),
        D=D, C=C, SUB=16, DB=column_block(D), STATE=state, KEYS32=keys32, IN_PREC="tf32x3", PREC=prec,
        SOLVE_PREC="tf32x3", ROUND_TF32=round_tf32, **_transition_launch(),
    )
    return Transitions(intra, tw, cm, k_end, U, k32, U32)


def chunk_queries(q, k, w, t: Transitions, accurate: bool = False) -> torch.Tensor:
    """The query kernel: the queries at their chunk start [B, H, N, group, C, D], float32, and the
    in-chunk logits written into t.intra. q [B, T, HQ, D]; k, w as `chunk_transitions` took them."""
    B, T, HQ, D = q.shape
    H, n, group, C = t.intra.shape[1:5]
    qs = torch.empty(B, H, n, group, C, D, dtype=torch.float32, device=q.device)
    prec, round_tf32 = product_precision(q.dtype, accurate)
    intra = t.intra
    _chunk_queries[(n, B * HQ)](
        q, k, w, t.tw, t.cm, qs, intra, HQ, group,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        w.stride(0), w.stride(1), w.stride(2), qs.stride(0), qs.stride(1), qs.stride(2), qs.stride(3),
        intra.stride(0), intra.stride(1), intra.stride(2), intra.stride(3),
        D=D, C=C, DB=column_block(D), IN_PREC="tf32x3", PREC=prec, ROUND_TF32=round_tf32, **_queries_launch(),
    )
    return qs


def unit_stride(*tensors):
    """The tensors with unit stride along their last dim (the kernels' loads assume it)."""
    return tuple(t if t.stride(-1) == 1 else t.contiguous() for t in tensors)


def prepare_path(q, k, w, beta, chunk_size: int, state: bool, coarse: bool = False, accurate: bool = False) -> Prepared:
    """q [B, T, HQ, D]; k, w [B, T, H, D]; beta [B, T, H] zero at padding; T a multiple of chunk_size.
    `state`: the float32 `Transport` too; `coarse`: k32 and tw too (`fwd.prepare_walk` instead runs the
    two kernels itself, with the super-chunk transport between them). Products with a float32 factor
    run in float32 accuracy for float32 inputs ("tf32x3", three tf32 tensor-core passes) and as one
    tf32 pass for 16-bit inputs, whose float32 factors are rounded to tf32 first (`_tf32`): k_end and
    U are rounded to 16 bits anyway, and a rounded tf32 pass keeps the float32 queries, logits and
    transport state within the 16-bit tests' bounds (kernels/README.md, "Precision"). W W^T and the
    UT solve always run in float32 accuracy (the solve amplifies errors in A where beta is near 2);
    `accurate` runs every product so (`product_precision`)."""
    q, k, w = unit_stride(q, k, w)
    t = chunk_transitions(k, w, beta, q.shape[2] // k.shape[2], chunk_size, state, keys32=state or coarse,
                          accurate=accurate)
    qs = chunk_queries(q, k, w, t, accurate)
    return prepared(qs, t, state, t.k32 if coarse else None, t.tw if coarse else None)


def prepared(qs, t: Transitions, state: bool, k32=None, tw=None) -> Prepared:
    """The forward's `Prepared` from the two kernels' outputs."""
    return Prepared(qs, t.intra, t.k_end.flatten(2, 3), t.U, Transport(t.k32, t.U32) if state else None, k32, tw)
