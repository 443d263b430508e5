"""One decoding step of the whole model, recorded once as a CUDA graph and replayed per token.

Eagerly, a token's step is about a dozen launches per layer issued from Python: at the 760M shape
and batch 1 the host takes longer to issue them than the GPU takes to run them, so the GPU idles.
Replaying a recorded graph issues them all at once. This works because the step touches only
device memory: the cache's lengths live on the device (`PathKVCache.lengths`), the short-conv
history and the RoPE position advance in place, and buffers are reserved up front. The host's
share of a step (the pending count, a fold every `fold_every` tokens) runs after each replay
(`PathKVCache.advance`), outside the graph. Work after the model's step that touches device memory
only (greedy generation's choice of the next token) can be recorded with it (`then`).

A small model's whole generation lasts tens of milliseconds, so the capture must not wait for the
GPU: `torch.cuda.graph` synchronizes the device and empties the allocator's cache before every
capture, which idles the GPU while the host records. `capturing_into` records without either, and
`decoding_pool` gives generation's captures one memory pool per device to record into.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager

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


_capture_streams: dict[int, torch.cuda.Stream] = {}
_decoding_pools: dict[int, "torch.cuda.MemPool"] = {}
_latest_pool_graphs: dict[tuple[int, int], "torch.cuda.CUDAGraph"] = {}


def _device_index(device) -> int:
    device = torch.device(device)
    return device.index if device.index is not None else torch.cuda.current_device()


def decoding_pool(device) -> tuple[int, int]:
    """The id of the memory pool every generation's captured step on `device` records into, kept
    for the life of the process (it holds one step's scratch). Sharing is safe while a generation's
    graph is never replayed after the next capture and every replay runs on the stream current at
    its generation (one stream per device, as the harness runs): a new capture may reuse the old
    graph's memory, and its replays queue behind the old graph's. A pool per capture would be
    released only at the allocator's next `empty_cache` (or failed allocation), which
    `capturing_into` does not call."""
    index = _device_index(device)
    if index not in _decoding_pools:
        with torch.cuda.device(index):
            _decoding_pools[index] = torch.cuda.MemPool()
    return _decoding_pools[index].id


def keep_pool_alive(pool: tuple[int, int], graph: "torch.cuda.CUDAGraph") -> None:
    """Hold `graph`, the latest capture into the shared `pool`, until the next one into it has been
    captured. The allocators count a pool's users by the graphs captured into it, and a pool whose
    graphs are all gone cannot be captured into again: PyTorch 2.11's pinned-host allocator asserts
    (`use_count > 0`, CachingHostAllocator.h) at the next `capture_begin` with its id."""
    _latest_pool_graphs[tuple(pool)] = graph


@contextmanager
def capturing_into(graph: "torch.cuda.CUDAGraph", device, pool=None):
    """Record the block's launches on `device` into `graph`, as `torch.cuda.graph` does but without
    its synchronize and `empty_cache`: a capture runs nothing, so it need not wait for queued work.
    The capture stream (one per device, never the default stream, which cannot capture) is ordered
    after the current stream's queued work, and the current stream after it."""
    index = _device_index(device)
    if index not in _capture_streams:
        _capture_streams[index] = torch.cuda.Stream(index)
    stream, current = _capture_streams[index], torch.cuda.current_stream(index)
    stream.wait_stream(current)
    with torch.cuda.device(index), torch.cuda.stream(stream):
        graph.capture_begin(pool=pool)
        try:
            yield graph
        finally:
            graph.capture_end()
    current.wait_stream(stream)


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
    shared with earlier captures that are never replayed again (the latest capture into it is held
    until the next, `keep_pool_alive`); without, the capture has its own,
    which the allocator releases only at its next `empty_cache` (or failed allocation) after the
    graph is gone. `shared_pool`: the device's `decoding_pool`, which generation's captures share."""

    def __init__(self, model, cache: DecoderCache, tokens: int, *, token: torch.Tensor | None = None, then=None,
                 pool=None, shared_pool: bool = False):
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
        if shared_pool:
            pool = decoding_pool(device)
        with ExitStack() as recording:
            for kv in self.caches:
                recording.enter_context(kv.capturing())
            with capturing_into(self.graph, device, pool):
                self.logits = model(self.token[:, None], past_key_values=cache, use_cache=True).logits
                if then is not None:
                    then(self.logits)
        if pool is not None:
            keep_pool_alive(pool, self.graph)

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
