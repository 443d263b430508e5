"""The data every attention backend consumes and produces.

All backends compute the same function: for query i and key j <= i,

    logit(i, j) = scale * q_i^T H_i H_{i-1} ... H_{j+1} k_j + gate_scale * (G_i - G_j)

with H_t = I - beta_t w_t w_t^T (PaTH; identity when `w` is None) and G the cumulative sum of
the log forget gates `g` (FoX; zero when `g` is None). Keys before the segment come from a
`KVState` whose keys are already *transported* to the end of the cache, K~_j = H_c ... H_{j+1} k_j,
so that a new query only needs the Householders of its own segment.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from path_eval.kernels.path_attn.chunks import gates_to_end
from path_eval.kernels.precision import compute_dtype


@dataclass
class AttentionInputs:
    """One segment of new tokens for one layer.

    q: [B, T, HQ, D]; k, v: [B, T, H, D] with HQ a multiple of H (GQA);
    w: [B, T, H, D] unit vectors and beta: [B, T, H] in (0, 2) for PaTH, else None;
    g: [B, T, HQ] log forget gates (<= 0) for FoX-style decay, else None;
    key_valid: [B, T] bool, False at padding (such positions are skipped entirely:
    no key, identity transform, no decay).
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scale: float
    w: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    g: torch.Tensor | None = None
    gate_scale: float = 1.0
    key_valid: torch.Tensor | None = None

    @property
    def compute_dtype(self) -> torch.dtype:
        """The dtype of the precision-sensitive arithmetic on these inputs (`kernels/precision.py`)."""
        return compute_dtype(self.q)

    def without_padding_effects(self) -> AttentionInputs:
        """Make padded positions inert: beta = 0 (H = I) and g = 0 (no decay)."""
        if self.key_valid is None:
            return self
        keep = self.key_valid
        beta = None if self.beta is None else self.beta * keep[..., None]
        g = None if self.g is None else self.g * keep[..., None]
        return AttentionInputs(self.q, self.k, self.v, self.scale, self.w, beta, g, self.gate_scale, keep)


@dataclass
class KVState:
    """Keys and values of everything before the current segment, for one layer.

    k: [B, L, H, D], for PaTH transported to the cache end; v: [B, L, H, D];
    g_to_end: [B, L, HQ], sum of log gates over (j, cache end], or None without gates;
    valid: [B, L] bool, or None when no padding was ever seen.
    """

    k: torch.Tensor
    v: torch.Tensor
    g_to_end: torch.Tensor | None = None
    valid: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return self.k.shape[1]


def concat_valid(old: torch.Tensor | None, new: torch.Tensor | None, old_len: int, new_len: int,
                 batch: int, device: torch.device) -> torch.Tensor | None:
    """Key-validity mask of cache + segment; None while everything is valid."""
    if old is None and new is None:
        return None
    if old is None:
        old = torch.ones(batch, old_len, dtype=torch.bool, device=device)
    if new is None:
        new = torch.ones(batch, new_len, dtype=torch.bool, device=device)
    return torch.cat([old, new], dim=1)


def gate_offsets_to_end(x: AttentionInputs, past: KVState | None, f: torch.dtype) -> torch.Tensor | None:
    """Per-key sum of log gates up to the new cache end: old keys decay by the whole segment, and
    a new key j by the segment's gates after j."""
    if x.g is None:
        return None
    g = x.g.to(f)
    new = gates_to_end(g)
    if past is None:
        return new
    return torch.cat([past.g_to_end.to(f) + g.sum(1, keepdim=True), new], dim=1)
