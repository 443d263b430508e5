"""Triton super-chunk transport for the forward's coarse walk: what `chunks.naive_super_chunk_transport`
(its torch reference) computes, from the preparation's float32 keys at their chunk end and rows of
T W (`prep.Prepared.k32`, `.tw`) and the input w.

One program per (super-chunk, batch x key head, block of DR rows of the suffix product). Walking
the super-chunk's chunks last to first, it keeps its rows of the suffix S_i = P_last ... P_{i+1}
(P = I - U, U = W^T (T W); S is the identity at the last chunk) in float32 and
  - moves chunk i's keys to the super-chunk end: k'' = k_end S_i^T, its DR columns of them;
  - steps the suffix through the chunk in the WY form: S_{i-1} = S_i - (S_i W^T) (T W),
three products of C x D x DR multiply-adds per chunk (the keys, S W^T and (S W^T)(T W)) instead of
the dense D x D transition U, which is never read; at the end its rows of U_super = I - S_first.
Per chunk a program reads the chunk's float32 keys and T W and its w (at D = 128, 1 KB per token of
float32 keys and T W), where the torch version, through `segment_transport`'s scan, reads every
chunk's float32 U (D x D) and makes D x D suffix products.
Rows of S are independent (S P only mixes columns), so D splits across programs without
communication; DR = `_transport_rows(D)`.

Precision as in the preparation: float32 inputs in tf32x3; 16-bit inputs in one tf32 pass whose
float32 factors are rounded to nearest tf32 first (`prep._tf32`; T W comes rounded). The keys and
U_super are rounded to the input dtype once.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from path_eval.kernels.path_attn.prep import _tf32, product_precision


@triton.jit
def _super_chunk_transport(
    KE, W, TW, KS, US,
    H,
    ske_b, ske_h, ske_n, sw_b, sw_t, sw_h, stw_b, stw_h, stw_n, sks_b, sks_h, sks_t, sus_b, sus_h, sus_n,
    D: tl.constexpr, C: tl.constexpr, SIZE: tl.constexpr, DR: tl.constexpr, PREC: tl.constexpr,
    ROUND_TF32: tl.constexpr,
):
    sc = tl.program_id(1).to(tl.int64)
    pid_bh = tl.program_id(2)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    rows = tl.program_id(0) * DR + tl.arange(0, DR)                 # rows of S this program owns
    d = tl.arange(0, D)
    ci = tl.arange(0, C)
    eye = tl.where(rows[:, None] == d[None, :], 1.0, 0.0)
    S = eye
    for i in range(SIZE):
        j = sc * SIZE + SIZE - 1 - i                                 # the chunk, last first
        S_op = _tf32(S, ROUND_TF32)
        k = _tf32(tl.load(KE + b * ske_b + h * ske_h + j * ske_n + ci[:, None] * D + d[None, :]), ROUND_TF32)
        keys = tl.dot(k, tl.trans(S_op), input_precision=PREC)     # [C, DR]: columns `rows` of k_end S^T
        tl.store(KS + b * sks_b + h * sks_h + (j * C + ci)[:, None] * sks_t + rows[None, :],
                 keys.to(KS.dtype.element_ty))
        w = _tf32(tl.load(W + b * sw_b + h * sw_h + (j * C + ci)[:, None] * sw_t + d[None, :]).to(tl.float32),
                  ROUND_TF32)
        tw = tl.load(TW + b * stw_b + h * stw_h + j * stw_n + ci[:, None] * D + d[None, :])
        sw = _tf32(tl.dot(S_op, tl.trans(w), input_precision=PREC), ROUND_TF32)   # [DR, C]
        S -= tl.dot(sw, tw, input_precision=PREC)
    tl.store(US + b * sus_b + h * sus_h + sc * sus_n + rows[:, None] * D + d[None, :],
             (eye - S).to(US.dtype.element_ty))


def _transport_launch() -> dict:
    """4 warps, the chunk loop pipelined over two stages: with 32 rows of S a program
    (`_transport_rows`) the fastest of the launches timed on an H200
    (results/bench/launch_configs_transport_h200.json), ahead of 64 rows at one or two stages (at two
    their D-wide float32 loads fill shared memory). At D = 128 the two stages take 128 KB of shared
    memory as Triton 3.6 builds them: one program per SM, faster all the same than 32 rows at one
    stage with more programs."""
    return dict(num_warps=4, num_stages=2)


def _transport_rows(head_dim: int) -> int:
    """Rows of the suffix product S per program: 32 (all of them below D = 32). Each program reads
    its super-chunk's keys, w and T W whole, so more row blocks read them again, from L2 (they
    launch together); with 32 rows twice the programs of 64 hide the chunk loop's latency, and 16 rows
    are slower again (results/bench/launch_configs_transport_h200.json)."""
    return min(head_dim, 32)


def super_chunk_transport_triton(k32, w, tw, size: int, count: int, dtype: torch.dtype, accurate: bool = False):
    """k32, tw [B, H, N, C, D] float32 (the preparation's); w [B, T, H, D] or any view with unit
    stride along D -> keys at their super-chunk end [B, H, count * size * C, D] and U_super
    [B, H, count, D, D] in `dtype`, for the first `count` super-chunks of `size` chunks; `accurate`:
    products in float32 accuracy for 16-bit `dtype` too (`prep.product_precision`)."""
    if not (k32.is_contiguous() and tw.is_contiguous()):
        raise ValueError("the super-chunk transport takes the preparation's contiguous k32 and tw")
    B, H, _, C, D = k32.shape
    keys = torch.empty(B, H, count * size * C, D, dtype=dtype, device=k32.device)
    U = torch.empty(B, H, count, D, D, dtype=dtype, device=k32.device)
    if w.stride(-1) != 1:
        w = w.contiguous()
    prec, round_tf32 = product_precision(dtype, accurate)
    DR = _transport_rows(D)
    # a super-chunk's row blocks first in the grid, so they run together and read its inputs from HBM once
    _super_chunk_transport[(D // DR, count, B * H)](
        k32, w, tw, keys, U, H,
        k32.stride(0), k32.stride(1), k32.stride(2), w.stride(0), w.stride(1), w.stride(2),
        tw.stride(0), tw.stride(1), tw.stride(2), keys.stride(0), keys.stride(1), keys.stride(2),
        U.stride(0), U.stride(1), U.stride(2),
        D=D, C=C, SIZE=size, DR=DR, PREC=prec, ROUND_TF32=round_tf32,
        **_transport_launch(),
    )
    return keys, U
