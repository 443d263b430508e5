"""Moving cached keys through a D x D product in place: K[b, j, h] <- K[b, j, h] M[b, h], the fold of
`PathKVCache` (M = the pending tail's Householder product P, or a segment's whole transition).

The torch version (`naive_move_keys`, also the test's reference in float64) makes a float32
copy of the cache, the product, and a rounded copy back: about 36 bytes of traffic per 16-bit key
element and a transient of twice the cache in float32. The kernel reads each key once and writes
it once, in place (a program owns its rows), with the product in float32 accuracy. For 16-bit
keys M is split into three 16-bit parts (M = M1 + M2 + M3, 8 mantissa bits each for bf16): the
key is exact in 16 bits, so three 16-bit tensor-core passes with float32 accumulation give the
float32 product, rounded once on the way back, with 16-bit operands only (tf32x3's float32
operands overflow shared memory at D = 128). Float32 and float64 caches (models run for checking,
not speed) keep the torch version.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from path_eval.kernels.precision import compute_dtype

ROWS_PER_PROGRAM = 1024  # M is loaded once per program; the cache's rows are split among programs


def naive_move_keys(k: torch.Tensor, M: torch.Tensor) -> None:
    """k [B, L, H, D] <- k M per (batch, head), M [B, H, D, D]; in float32 (float64 for float64)."""
    f = compute_dtype(k)
    k.copy_(torch.einsum("bjhd,bhde->bjhe", k.to(f), M.to(f)).to(k.dtype))


@triton.jit
def _move_keys(
    K, M, L, H,
    sk_b, sk_t, sk_h, sm_b, sm_h, sm_r, sm_c,
    D: tl.constexpr, BL: tl.constexpr, ROWS: tl.constexpr,
):
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = (pid_bh % H).to(tl.int64)
    d = tl.arange(0, D)
    m = tl.load(M + b * sm_b + h * sm_h + d[:, None] * sm_r + d[None, :] * sm_c).to(tl.float32)
    dt = K.dtype.element_ty
    m1 = m.to(dt)
    m2 = (m - m1.to(tl.float32)).to(dt)
    m3 = (m - m1.to(tl.float32) - m2.to(tl.float32)).to(dt)
    first = tl.program_id(0).to(tl.int64) * ROWS
    for start in range(0, ROWS, BL):
        rows = first + start + tl.arange(0, BL)
        ok = (rows < L)[:, None]
        ptrs = K + b * sk_b + h * sk_h + rows[:, None] * sk_t + d[None, :]
        k = tl.load(ptrs, mask=ok, other=0.0)
        tl.store(ptrs, (tl.dot(k, m1) + tl.dot(k, m2) + tl.dot(k, m3)).to(dt), mask=ok)


def move_keys(k: torch.Tensor, M: torch.Tensor) -> None:
    """k [B, L, H, D] <- k M in place, M [B, H, D, D] float32 with any strides (a transposed view is
    fine). 16-bit keys with unit stride in D (the cache's first L rows) take the kernel."""
    B, L, H, D = k.shape
    if not L:
        return
    if k.dtype not in (torch.bfloat16, torch.float16) or k.stride(-1) != 1:
        return naive_move_keys(k, M)
    grid = (triton.cdiv(L, ROWS_PER_PROGRAM), B * H)
    _move_keys[grid](
        k, M, L, H, k.stride(0), k.stride(1), k.stride(2), M.stride(0), M.stride(1), M.stride(2), M.stride(3),
        D=D, BL=64, ROWS=ROWS_PER_PROGRAM,
    )
