"""One decoding step of the whole model, recorded once as a CUDA graph and replayed per token.

Eagerly, a token's step is about a dozen launches per layer issued from Python: at the 760M shape
and batch 1 the host takes longer to issue them than the GPU takes to run them, so the GPU idles.
Replaying a recorded graph issues them all at once. This works because the step touches only
device memory: the cache's lengths live on the device (`PathKVCache.lengths`), the short-conv
history and the RoPE position advance in place, and buffers are reserved up front. The host's
share of a step (the pending count, a fold every `fold_every` tokens) runs after each replay
(`PathKVCache.advance`), outside the graph. Work after the model's step that touches device memory
only (greedy generation's choice of the next token) can be recorded with it (`then`).
"""
from __future__ import annotations

from contextlib import ExitStack

import torch

from path_eval.errors import PathEvalError
from path_eval.models.cache import DecoderCache


def graph_unavailable(model) -> str | None:
    """Why this model cannot decode through a CUDA graph, or None when it can: the step must touch
    device memory only, which the triton backend's cache (`PathKVCache`) does on a CUDA device."""
    if model.lm_head.weight.device.type != "cuda":
        return "the model is not on a CUDA device"
    if model.backend_name != "triton":
        return f"the {model.backend_name} attention backend keeps no device-only cache (use the triton backend)"
    return None


def graph_decoding(model, asked: bool | None) -> bool:
    """Whether to decode through a CUDA graph: `asked` True insists (one clear line when this model
    cannot), None takes it wherever it can, False never."""
    if asked is False:
        return False
    why = graph_unavailable(model)
    if why is not None and asked:
        raise PathEvalError(f"cannot decode through a CUDA graph: {why}; pass cuda_graph=False")
    return why is None


def reserve_decoding(cache: DecoderCache, tokens: int) -> None:
    """Room in every layer's cache that can keep it (the triton backend's) for `tokens` decoding
    steps, made before the first step so the buffers grow once, to their final size."""
    for layer in cache.layers:
        reserve = getattr(layer.kv, "reserve", None)
        if reserve is not None:
            reserve(tokens)


class CapturedDecodeStep:
    """`step(token [B]) -> logits [B, 1, vocab]` for up to `tokens` tokens after the cache's own,
    continuing `cache` exactly as `model(token[:, None], past_key_values=cache, use_cache=True)`
    would. Build it after one eager decoding step (which allocates the caches' tail buffers and
    compiles the kernels), and step the cache only through it from then on; the logits tensor is
    the graph's and is overwritten by the next step.

    `token`: a [B] tensor the graph reads each step's input from, written in place by the caller
    (then `step()` takes no argument); `then(logits)`: device-only work recorded after the model's
    step and replayed with it, such as choosing the next token into `token` (which must have run
    eagerly once, as the step itself). `pool`: a memory pool (`torch.cuda.graph_pool_handle()`)
    shared with earlier captures that are never replayed again (each capture has its own otherwise)."""

    def __init__(self, model, cache: DecoderCache, tokens: int, *, token: torch.Tensor | None = None, then=None,
                 pool=None):
        graph_decoding(model, asked=True)
        self.caches = [layer.kv for layer in cache.layers]
        if any(kv.tail_k is None for kv in self.caches):
            raise PathEvalError("run one eager decoding step on this cache before capturing its step "
                                "(it allocates the pending tail's buffers)")
        reserve_decoding(cache, tokens)
        self.buffers = [kv.k for kv in self.caches]  # what the graph writes into; never replaced while it lives
        self.remaining = tokens
        device = model.lm_head.weight.device
        self.token = token if token is not None else torch.zeros(self.caches[0].k.shape[0], dtype=torch.long,
                                                                  device=device)
        self.graph = torch.cuda.CUDAGraph()
        with ExitStack() as recording:
            for kv in self.caches:
                recording.enter_context(kv.capturing())
            with torch.cuda.device(device), torch.cuda.graph(self.graph, pool=pool):
                self.logits = model(self.token[:, None], past_key_values=cache, use_cache=True).logits
                if then is not None:
                    then(self.logits)

    def __call__(self, token: torch.Tensor | None = None) -> torch.Tensor:
        if self.remaining <= 0:
            raise PathEvalError("the captured decoding step has used the room it reserved; capture a new one")
        if any(kv.k is not k for kv, k in zip(self.caches, self.buffers)):
            raise PathEvalError("the cache grew outside the captured decoding step; capture a new one")
        if token is not None:
            self.token.copy_(token)
        self.graph.replay()
        for kv in self.caches:
            kv.advance()
        self.remaining -= 1
        return self.logits
