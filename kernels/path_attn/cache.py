"""A growing KV cache for PaTH / FoX / plain attention that keeps decoding near plain attention's
memory traffic.

Keys before `folded` are stored transported to position `folded` (K~_j = H_folded ... H_{j+1} k_j).
Decoding steps (`decode.py`) leave K~ alone: the newest tokens (fewer than `fold_every`) wait in a
pending tail, their keys transported to the newest position, with the tail's D x D product P, so
a step reads K~ and V once, like plain attention. When the tail fills, or a multi-token segment
arrives, the keys move to the new end: one in-place pass over the cache with P (`fold.py`; after
a segment, with the segment's whole product), instead of fla's rewrite of every key after every
token. A multi-token segment runs the Triton forward over the folded cache. Buffers are
preallocated and grow by doubling, or once to the size `reserve` asks for.

A decoding step touches only device memory (the lengths included, `lengths`), so it can be
captured in a CUDA graph: inside `capturing()` a step leaves the host's bookkeeping (the pending
count, the fold when the tail is full) to `advance()`, which the graph's owner calls after each
replay; `reserve` makes room first, since a replay cannot grow the buffers.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from path_eval.kernels.path_attn.chunks import gates_to_end, segment_transport
from path_eval.kernels.path_attn.decode import decode_step
from path_eval.kernels.path_attn.fold import move_keys
from path_eval.kernels.path_attn.fwd import path_attention

FOLD_EVERY = 64


class PathKVCache:
    """One layer's cache. All tensors batch-first: k / v [B, capacity, H, D]; g_end [B, capacity, HQ]
    (sum of the log gates of positions j+1 .. folded-1); valid [B, capacity] bool. The pending tail:
    tail_k [B, window, H, D] float32 (keys at the newest position; raw without PaTH), P [B, H, D, D]
    float32 (its Householder product, PaTH only), tail_g [B, window, HQ] float32 (in-tail cumulative
    log gates), tail_valid [B, window] int8; its values already sit in v at their final place."""

    def __init__(self, fold_every: int = FOLD_EVERY):
        if not 1 <= fold_every <= 64:
            raise ValueError(f"fold_every {fold_every} must be in 1..64 (the pending tail is one chunk)")
        self.fold_every = fold_every
        self.window = max(16, 1 << (fold_every - 1).bit_length())  # tail buffers: a power of two
        self.folded = 0
        self.pending_len = 0
        self.k = self.v = self.g_end = self.valid = None
        self.tail_k = self.P = self.tail_g = self.tail_valid = None
        self.lengths: torch.Tensor | None = None  # int32 [folded, pending_len] on the device, for the kernels
        self.planned = 0  # the length `reserve` made room for: decoding steps split the cache as for it
        self._step: dict[str, torch.Tensor] = {}
        self._capturing = False

    @property
    def length(self) -> int:
        return self.folded + self.pending_len

    def attend(self, q, k, v, *, scale: float, w=None, beta=None, g=None, gate_scale: float = 1.0,
               key_valid=None, splits: int | None = None, append: bool = True) -> torch.Tensor:
        """Outputs of the new tokens q [B, T, HQ, D] over cache + themselves; appends them unless
        `append` is False. `splits` spreads the cache over more programs (flash-decoding)."""
        B, T = q.shape[:2]
        if key_valid is None and self.valid is not None:
            key_valid = torch.ones(B, T, dtype=torch.bool, device=q.device)
        if append and T == 1:
            self._ensure(self.length + self.window, k, v, 0 if g is None else g.shape[2], g is not None,
                         key_valid is not None)
            self._tail_state(q, k, w is not None, g is not None)
            out = decode_step(self, q, k, v, w, beta, g, None if key_valid is None else key_valid.view(torch.int8),
                              scale, gate_scale, splits)
            self.lengths[1:] += 1
            if not self._capturing:
                self.advance()
            return out
        self._fold_pending()
        if splits is None:  # a short segment: spread the cache over the SMs (one-chunk segments only)
            splits = max(1, min(32, self.folded // 1024)) if T <= 64 else 1
        out, transport = path_attention(q, k, v, scale=scale, w=w, beta=beta, g=g, gate_scale=gate_scale,
                                        key_valid=key_valid, splits=splits, transport=append,
                                        **self._cache_args(g is not None))
        if append:
            f = self.folded
            self._ensure(f + T, k, v, 0 if g is None else g.shape[2], g is not None, key_valid is not None)
            self.v[:, f:f + T] = v
            if self.valid is not None:
                self.valid[:, f:f + T] = True if key_valid is None else key_valid
            self._fold_segment(k, w, g, key_valid, transport)
        return out

    def advance(self) -> None:
        """The host's side of one decoding step: count the token, fold the tail when it is full."""
        self.pending_len += 1
        if self.pending_len == self.fold_every:
            self._fold_pending()

    @contextmanager
    def capturing(self):
        """Steps inside change device memory only (a CUDA graph records them); call `advance()`
        once per step replayed, since the host's count does not move while recording."""
        self._capturing = True
        try:
            yield self
        finally:
            self._capturing = False

    def reserve(self, tokens: int) -> None:
        """Room for `tokens` more decoding steps (and the tail window a step asks for), grown to just
        that size, so that no step grows a buffer (which a replayed graph could not follow) or
        doubles it. Needs a cache that holds tokens already."""
        hq = 0 if self.g_end is None else self.g_end.shape[2]
        self.planned = max(self.planned, self.length + tokens)
        self._ensure(self.length + tokens + self.window, self.k, self.v, hq, self.g_end is not None,
                     self.valid is not None, exact=True)

    def step_buffers(self, splits: int) -> dict[str, torch.Tensor]:
        """Scratch of a decoding step: per-split partial outputs and log-sum-exps, kept between steps."""
        if "part" not in self._step or self._step["part"].shape[0] < splits:
            B, _, H, D = self.tail_k.shape
            hq = self._step["hq"]
            n = max(splits, 64)
            self._step.update(part=self.tail_k.new_empty(n, B * hq, D), lse=self.tail_k.new_empty(n, B * hq))
        return self._step

    def _tail_state(self, q, k, transform: bool, gates: bool) -> None:
        """The pending tail's buffers, allocated on the first decoding step (a mask buffer starts all
        valid, for a padding mask that starts mid-tail)."""
        B, _, HQ, D = q.shape
        H = k.shape[2]
        if self.tail_k is None:
            self.tail_k = torch.zeros(B, self.window, H, D, dtype=torch.float32, device=q.device)
            self._step = dict(hq=HQ, dummy=torch.zeros(1, dtype=torch.float32, device=q.device))
            self.lengths = torch.empty(2, dtype=torch.int32, device=q.device)
            self._lengths_to_device()  # by fills: a copy from the host would wait for the prefill
        if transform and self.P is None:
            self.P = torch.eye(D, dtype=torch.float32, device=q.device).repeat(B, H, 1, 1)
        if gates and self.tail_g is None:
            self.tail_g = torch.zeros(B, self.window, HQ, dtype=torch.float32, device=q.device)
        if self.valid is not None and self.tail_valid is None:
            self.tail_valid = torch.ones(B, self.window, dtype=torch.int8, device=q.device)

    def _cache_args(self, gates: bool) -> dict:
        f = self.folded
        if not f:
            return {}
        return dict(cache_k=self.k[:, :f], cache_v=self.v[:, :f], cache_g=self.g_end[:, :f] if gates else None,
                    cache_valid=None if self.valid is None else self.valid[:, :f])

    def _ensure(self, need: int, like_k, like_v, hq: int, gates: bool, masked: bool, exact: bool = False) -> None:
        """Room for `need` positions: doubling (token-by-token growth), or just `need` when the total is known."""
        cap = 0 if self.k is None else self.k.shape[1]
        if need <= cap and (not masked or self.valid is not None) and (not gates or self.g_end is not None):
            return
        new_cap = (need if exact else max(need, 2 * cap, 256)) if need > cap else cap
        B, _, H, D = like_k.shape

        def grow(old, shape, dtype, fill=0):
            if old is not None and old.shape == shape:
                return old
            t = torch.full(shape, fill, dtype=dtype, device=like_k.device)
            if old is not None:
                t[:, :old.shape[1]] = old
            return t
        self.k = grow(self.k, (B, new_cap, H, D), like_k.dtype)
        self.v = grow(self.v, (B, new_cap, H, like_v.shape[-1]), like_v.dtype)
        if gates:
            self.g_end = grow(self.g_end, (B, new_cap, hq), torch.float32)
        if masked or self.valid is not None:
            self.valid = grow(self.valid, (B, new_cap), torch.bool, fill=True)

    def _fold_pending(self) -> None:
        """Move the folded keys through the tail's product P (in place) and make the tail folded."""
        p, f = self.pending_len, self.folded
        if not p:
            return
        if self.P is not None:
            move_keys(self.k[:, :f], self.P)
            self.P.copy_(torch.eye(self.P.shape[-1], dtype=self.P.dtype, device=self.P.device))
        self.k[:, f:f + p] = self.tail_k[:, :p].to(self.k.dtype)
        if self.tail_g is not None:
            total = self.tail_g[:, p - 1:p]  # the tail's log gates, summed
            if f:
                self.g_end[:, :f] += total
            self.g_end[:, f:f + p] = total - self.tail_g[:, :p]
        if self.tail_valid is not None:
            self.valid[:, f:f + p] = self.tail_valid[:, :p] != 0
            self.tail_valid.fill_(1)
        self.folded = f + p
        self.pending_len = 0
        self._lengths_to_device()

    def _lengths_to_device(self) -> None:
        if self.lengths is not None:
            self.lengths[0].fill_(self.folded)  # fills take the value as a launch argument: no host copy
            self.lengths[1].fill_(self.pending_len)

    def _fold_segment(self, k, w, g, key_valid, transport) -> None:
        """Move cache + segment keys to the segment end (the segment's dense chunk products)."""
        f, n = self.folded, k.shape[1]
        if w is not None:
            new, whole = segment_transport(transport, n)
            move_keys(self.k[:, :f], whole.transpose(-1, -2))  # k <- whole k, for every cached key
            self.k[:, f:f + n] = new.movedim(1, 2).to(self.k.dtype)
        else:
            self.k[:, f:f + n] = k
        if g is not None:
            if key_valid is not None:
                g = g * key_valid[..., None]
            g = g.float()
            if f:
                self.g_end[:, :f] += g.sum(1, keepdim=True)
            self.g_end[:, f:f + n] = gates_to_end(g)
        self.folded = f + n
        self._lengths_to_device()
