"""RMSNorm in one Triton launch: what `naive.rms_norm` computes.

In torch a norm of 16-bit x is nine kernels (float32 copies of x and the weight, the square, the
mean, the epsilon, the rsqrt, two products and the copy back). A decoding step of the 760M PaTH
model has 49 norms, so about 440 launches of a few microseconds each, even replayed from a CUDA
graph, for arithmetic that takes well under one. Here each program normalises a block of rows in
float32 and rounds once to the input dtype, as the torch path does; results differ from it only by
the order of the sum of squares. Its effect on whole-model generation is measured in
results/bench/generation_h200.json (tabled in docs/benchmarks.md).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

ELEMENTS_PER_PROGRAM = 4096  # rows of N = 64 (per-head norms) go 64 to a program, of 1536 (2048 wide) two


# Row counts vary from call to call (a decoding step's batch, a prefill chunk's rows): specialising on
# them (value 1, multiple of 16) would compile a kernel per kind of count, each a cold start's cost.
@triton.jit(do_not_specialize=["R", "weight_rows"])
def _rms_norm(X, Wt, Y, R, N, weight_rows, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    ok = (rows < R)[:, None] & (cols < N)[None, :]
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=ok, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, 1) / N + eps)
    w = tl.load(Wt + (rows % weight_rows)[:, None] * N + cols[None, :], mask=ok, other=0.0).to(tl.float32)
    tl.store(Y + rows[:, None] * N + cols[None, :], (x * inv[:, None] * w).to(Y.dtype.element_ty), mask=ok)


def rms_norm_triton(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """As `naive.rms_norm` for 16-bit or float32 x on the GPU (or under TRITON_INTERPRET=1)."""
    N = x.shape[-1]
    if weight.numel() not in (N, N * (x.shape[-2] if x.dim() > 1 else 1)):
        raise ValueError(f"rms_norm_triton: a weight of {weight.numel()} values fits neither the last dim ({N}) "
                         f"nor every head of x {tuple(x.shape)}")
    x = x.contiguous()
    y = torch.empty_like(x)
    R = x.numel() // N if N else 0
    if not R:
        return y
    BLOCK_N = triton.next_power_of_2(N)
    ROWS = max(1, ELEMENTS_PER_PROGRAM // BLOCK_N)
    _rms_norm[(triton.cdiv(R, ROWS),)](x, weight.contiguous(), y, R, N, weight.numel() // N, eps,
                                       BLOCK_N=BLOCK_N, ROWS=ROWS)
    return y
