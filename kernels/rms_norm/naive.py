"""RMSNorm in torch: the model's norms off the `triton` backend and the reference of `fused`.

    y = x / sqrt(mean(x^2) + eps) * weight      over the last dim, in float32 (float64 for float64)

rounded once to x's dtype. The weight is per channel of the last dim ([N]) or, for per-head q / k
norms of x [..., heads, N], per channel of every head ([heads * N], fla's GroupNorm in FoX).
"""
from __future__ import annotations

import torch

from path_eval.kernels.precision import compute_dtype


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    f = compute_dtype(x)
    xf = x.to(f)
    y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return (y * weight.to(f).view(-1, x.shape[-1])).to(x.dtype)
