"""Token-id rows padded into one batch, for generation (on the left) and scoring (on the right)."""
from __future__ import annotations

import numpy as np
import torch


def padded_batch(rows: list, pad_id: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """`rows` (lists of ints, or integer arrays, which copy fastest) as one [B, width] int64 batch of
    ids and its 0/1 mask (int64), width the longest row's, padded with `pad_id` on the left
    (generation: every prompt ends at the last column) or on the right (scoring). Filled through
    numpy: torch.tensor of a Python list is about 7x slower (1.9 ms against 0.27 ms for 16K ids on a
    2-core CPU), which a batch of 32 long prompts pays on the CPU while the GPU waits."""
    width = max(map(len, rows))
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for b, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[b, span] = row
        mask[b, span] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)
