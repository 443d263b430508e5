"""The one rule for the dtype of precision-sensitive arithmetic, shared by the kernels' torch
references and the model (norms, gates, w, RoPE, the cache fold)."""
from __future__ import annotations

import torch


def compute_dtype(t: torch.Tensor) -> torch.dtype:
    """float32 for 16-bit and float32 tensors; float64 stays float64, so that the float64
    definition checks every step at full precision."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32
