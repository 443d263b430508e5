"""The decoding cache: per layer the attention state and the w short-conv history."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from path_eval.models.attention import KVState


@dataclass
class LayerCache:
    """kv: keys (PaTH: transported to the cache end), values, gate offsets, padding mask.
    conv: the last (conv_size - 1) pre-convolution w_proj rows, [B, conv_size - 1, kv_dim]."""

    kv: KVState
    conv: torch.Tensor | None = None


class DecoderCache:
    """What `model(..., use_cache=True)` returns as `past_key_values` and accepts back.

    `next_position` counts each row's real (non-padding) tokens, so RoPE positions continue
    from where each row stands however much left padding it has.
    """

    def __init__(self, num_layers: int):
        self.layers: list[LayerCache | None] = [None] * num_layers
        self.next_position: torch.Tensor | None = None

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Cached positions, padding included (the attention-mask length so far)."""
        layer = self.layers[layer_idx]
        return 0 if layer is None else layer.kv.length

    def __len__(self) -> int:
        return len(self.layers)
