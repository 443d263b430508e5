"""PaTH's Householder directions in one Triton launch: the causal depthwise convolution of the w
projection, silu and the per-head l2 norm (`naive.householder_directions`, its torch reference).

In torch these are a concatenation with the history, two transposes around cuDNN's depthwise
convolution (its generic kernel), silu, a float32 copy, a square, a sum over each head's D columns,
an rsqrt and a product, with cuDNN's generic convolution and the sum over D the largest of them
in a scoring call's profile (results/bench/scoring_profile_h200_*.json). Each program reads its rows of the projection (and,
for the first rows, of the history) once and writes float32 w once. The convolution accumulates
in float32 and rounds to the input dtype, silu too, as torch's 16-bit ops do, so w matches the
torch path but for accumulation order.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from path_eval.kernels.short_conv.naive import NORM_EPS

ROWS_PER_PROGRAM = 64


@triton.jit(do_not_specialize=["T"])  # one compile for a decoding step's T = 1 and every prefill chunk's T
def _householder_directions(
    RAW, HIST, CONV_W, CONV_B, OUT, T, H,
    sr_b, sr_t, sh_b, sh_t, scw_c, scw_k,
    D: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr, HAS_HIST: tl.constexpr, HAS_BIAS: tl.constexpr,
    EPS: tl.constexpr,
):
    pid_bh = tl.program_id(1)
    b = (pid_bh // H).to(tl.int64)
    h = pid_bh % H
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = h * D + tl.arange(0, D)
    live = rows < T
    acc = tl.zeros((ROWS, D), dtype=tl.float32)
    for j in tl.static_range(K):
        src = rows - (K - 1) + j  # the input row of tap j; negative: row K - 1 + src of the history
        tap = tl.load(CONV_W + cols * scw_c + j * scw_k).to(tl.float32)
        x = tl.load(RAW + b * sr_b + src[:, None] * sr_t + cols[None, :],
                    mask=(live & (src >= 0))[:, None], other=0.0).to(tl.float32)
        if HAS_HIST:
            x += tl.load(HIST + b * sh_b + (src + K - 1)[:, None] * sh_t + cols[None, :],
                         mask=(live & (src < 0))[:, None], other=0.0).to(tl.float32)
        acc += x * tap[None, :]
    if HAS_BIAS:
        acc += tl.load(CONV_B + cols).to(tl.float32)[None, :]
    dt = RAW.dtype.element_ty
    y = acc.to(dt).to(tl.float32)
    s = (y / (1.0 + tl.exp(-y))).to(dt).to(tl.float32)
    w = s * tl.rsqrt(tl.sum(s * s, 1) + EPS)[:, None]
    tl.store(OUT + (b * T + rows)[:, None] * (H * D) + cols[None, :], w, mask=live[:, None])


def householder_directions_triton(raw: torch.Tensor, history: torch.Tensor | None, conv_weight: torch.Tensor,
                                  conv_bias: torch.Tensor | None, heads: int) -> torch.Tensor:
    """As `naive.householder_directions` with a convolution: raw [B, T, C] with unit stride in C
    (16-bit or float32), history [B, K - 1, C] or None -> float32 [B, T, heads, C / heads]."""
    B, T, C = raw.shape
    D = C // heads
    K = conv_weight.shape[-1]
    if history is not None:
        history = history.to(raw.dtype)
        if history.stride(-1) != 1:
            history = history.contiguous()
    if raw.stride(-1) != 1:
        raw = raw.contiguous()
    out = torch.empty(B, T, heads, D, dtype=torch.float32, device=raw.device)
    if not T:
        return out
    grid = (triton.cdiv(T, ROWS_PER_PROGRAM), B * heads)
    _householder_directions[grid](
        raw, history if history is not None else raw, conv_weight, conv_bias if conv_bias is not None else conv_weight,
        out, T, heads, raw.stride(0), raw.stride(1),
        history.stride(0) if history is not None else 0, history.stride(1) if history is not None else 0,
        conv_weight.stride(0), conv_weight.stride(-1),
        D=D, K=K, ROWS=ROWS_PER_PROGRAM, HAS_HIST=history is not None, HAS_BIAS=conv_bias is not None, EPS=NORM_EPS,
    )
    return out
