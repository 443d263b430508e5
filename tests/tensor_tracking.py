"""Test helper: the largest tensor any torch op creates inside a block (memory-shape assertions
that do not depend on the allocator or the machine)."""
from torch.utils._python_dispatch import TorchDispatchMode

import torch


class LargestTensor(TorchDispatchMode):
    """`with LargestTensor() as seen: ...` then `seen.numel` is the largest output's element count."""

    def __init__(self):
        super().__init__()
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor):
                self.numel = max(self.numel, t.numel())
        return out
