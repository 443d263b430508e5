"""One decoding step of the whole model, recorded once as a CUDA graph and replayed per token.

Eagerly, a token's step is about a dozen launches per layer issued from Python: at the 760M shape
and batch 1 the host takes longer to issue them than the GPU takes to run them, so the GPU idles.
Replaying a recorded graph issues them all at once. This works because the step touches only
device memory: the cache's lengths live on the device (`PathKVCache.lengths`), the short-conv
history and the RoPE position advance in place, and buffers are reserved up front. The host's
share of a step (the pending count, a fold every `fold_every` tokens) runs after each replay
(`PathKVCache.advance`), outside the graph.
"""
from __future__ import annotations

from contextlib import ExitStack

import torch

from path_eval.errors import PathEvalError
from path_eval.kernels.path_attn.cache import PathKVCache
from path_eval.models.cache import DecoderCache


def graph_decoding(model, cache: DecoderCache, asked: bool | None) -> bool:
    """Whether to decode through a CUDA graph: `asked` True insists (one clear line when this model
    and cache cannot), None takes it wherever they can, False never."""
    if asked is False:
        return False
    why = None
    if model.lm_head.weight.device.type != "cuda":
        why = "the model is not on a CUDA device"
    elif any(layer is None or not isinstance(layer.kv, PathKVCache) for layer in cache.layers):
        why = f"the {model.backend_name} attention backend keeps no device-only cache (use the triton backend)"
    if why is not None and asked:
        raise PathEvalError(f"cannot decode through a CUDA graph: {why}; pass cuda_graph=False")
    return why is None


def reserve_decoding(cache: DecoderCache, tokens: int) -> None:
    """Room in every layer's cache for `tokens` decoding steps, made before the first step so the
    buffers grow once, to their final size."""
    for layer in cache.layers:
        layer.kv.reserve(tokens)


class CapturedDecodeStep:
    """`step(token [B]) -> logits [B, 1, vocab]` for up to `tokens` tokens after the cache's own,
    continuing `cache` exactly as `model(token[:, None], past_key_values=cache, use_cache=True)`
    would. Build it after one eager decoding step (which allocates the caches' tail buffers and
    compiles the kernels); the logits tensor is the graph's and is overwritten by the next step."""

    def __init__(self, model, cache: DecoderCache, tokens: int):
        graph_decoding(model, cache, asked=True)
        reserve_decoding(cache, tokens)
        self.caches = [layer.kv for layer in cache.layers]
        self.remaining = tokens
        batch = self.caches[0].k.shape[0]
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=model.lm_head.weight.device)
        self.graph = torch.cuda.CUDAGraph()
        with ExitStack() as recording:
            for kv in self.caches:
                recording.enter_context(kv.capturing())
            with torch.cuda.graph(self.graph):
                self.logits = model(self.ids, past_key_values=cache, use_cache=True).logits

    def __call__(self, token: torch.Tensor) -> torch.Tensor:
        if self.remaining <= 0:
            raise PathEvalError("the captured decoding step has used the room it reserved; capture a new one")
        self.ids.copy_(token[:, None])
        self.graph.replay()
        for kv in self.caches:
            kv.advance()
        self.remaining -= 1
        return self.logits
