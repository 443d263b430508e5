"""PaTH's Householder directions from the w projection, in torch: what the model computes off the
Triton backend, and the reference of the fused kernel (`fused.householder_directions_triton`).

    w_t = l2norm(silu(sum_j conv[:, j] * raw_{t - K + 1 + j} + bias))     per head, float32

a causal depthwise convolution of K taps (fla's ShortConvolution) whose rows before the segment
come from `history` (the last K - 1 rows of w_proj output before it; zeros where a sequence starts).
The convolution and silu round to the input dtype as torch's 16-bit ops do, the norm is float32
(float64 for float64 inputs). Without a convolution (`conv_weight` None) w is the normed projection.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from path_eval.kernels.precision import compute_dtype

NORM_EPS = 1e-6  # fla's l2norm epsilon, added to the squared norm


def householder_directions(raw: torch.Tensor, history: torch.Tensor | None, conv_weight: torch.Tensor | None,
                           conv_bias: torch.Tensor | None, heads: int) -> torch.Tensor:
    """raw [B, T, C] (w_proj output), history [B, K - 1, C] or None (zeros), conv_weight [C, 1, K],
    conv_bias [C] or None -> unit vectors [B, T, heads, C / heads] in float32 (float64 for float64)."""
    B, T, C = raw.shape
    if conv_weight is not None:
        full = torch.cat([_past(history, raw, conv_weight.shape[-1] - 1), raw], 1)
        raw = F.silu(F.conv1d(full.transpose(1, 2), conv_weight, conv_bias, groups=C).transpose(1, 2))
    w = raw.reshape(B, T, heads, C // heads).to(compute_dtype(raw))
    return w * torch.rsqrt(w.square().sum(-1, keepdim=True) + NORM_EPS)


def conv_history(history: torch.Tensor | None, raw: torch.Tensor, size: int) -> torch.Tensor:
    """The last `size` rows of history + raw (the next segment's convolution history), a view of `raw`
    where it is long enough; history None stands for zeros."""
    T = raw.shape[1]
    if T >= size:
        return raw[:, T - size:]
    return torch.cat([_past(history, raw, size)[:, T:], raw], 1)


def _past(history: torch.Tensor | None, raw: torch.Tensor, size: int) -> torch.Tensor:
    """The `size` rows before `raw` in its dtype: the history, or zeros where a sequence starts."""
    return history.to(raw.dtype) if history is not None else raw.new_zeros(raw.shape[0], size, raw.shape[2])
