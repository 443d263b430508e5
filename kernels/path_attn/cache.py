"""A growing KV cache for PaTH / FoX / plain attention that keeps decoding near plain attention's
memory traffic.

Keys before `folded` are stored transported to position `folded` (K~_j = H_folded ... H_{j+1} k_j).
The newest tokens (fewer than `fold_every`) wait raw in a pending tail. Each call attends the
pending tail plus the new tokens as one segment (the Triton forward: in-segment PaTH, then plain
attention of the segment-transformed queries over K~), so a decoding step reads K~ and V once,
like plain attention. Only when the tail fills (or a multi-token segment arrives) are the keys
moved to the new end: one GEMM over the cache with the segment's dense d x d product, instead of
fla's rewrite of every key after every token. Buffers are preallocated and grow by doubling.
"""
from __future__ import annotations

import torch

from path_eval.kernels.path_attn.chunks import gates_to_end, transport_state
from path_eval.kernels.path_attn.fwd import path_attention

FOLD_EVERY = 64


class PathKVCache:
    """One layer's cache. All tensors batch-first: k / v [B, capacity, H, D]; g_end [B, capacity, HQ]
    (sum of log gates over (j, folded]); valid [B, capacity] bool."""

    def __init__(self, fold_every: int = FOLD_EVERY):
        self.fold_every = fold_every
        self.folded = 0
        self.k = self.v = self.g_end = self.valid = None
        self.pending: dict[str, torch.Tensor | None] = {}
        self.pending_len = 0

    @property
    def length(self) -> int:
        return self.folded + self.pending_len

    def attend(self, q, k, v, *, scale: float, w=None, beta=None, g=None, gate_scale: float = 1.0,
               key_valid=None, splits: int | None = None, append: bool = True) -> torch.Tensor:
        """Outputs of the new tokens q [B, T, HQ, D] over cache + themselves; appends them unless
        `append` is False."""
        B, T, HQ, D = q.shape
        if key_valid is None and self.valid is not None:
            key_valid = torch.ones(B, T, dtype=torch.bool, device=q.device)
        new = dict(k=k, v=v, w=w, beta=beta, g=g, valid=key_valid)
        seg = {name: self._with_pending(name, t) for name, t in new.items()}
        p = self.pending_len
        q_seg = torch.cat([q.new_zeros(B, p, HQ, D), q], 1) if p else q
        f = self.folded
        cache = {}
        if f:
            cache = dict(cache_k=self.k[:, :f], cache_v=self.v[:, :f],
                         cache_g=None if g is None else self.g_end[:, :f],
                         cache_valid=None if self.valid is None else self.valid[:, :f])
        n_seg = p + T
        if splits is None:  # decoding: spread the cache over the SMs (one-chunk segments only)
            splits = max(1, min(32, f // 1024)) if n_seg <= 64 else 1
        out, chunks = path_attention(q_seg, seg["k"], seg["v"], scale=scale, w=seg["w"], beta=seg["beta"],
                                     g=seg["g"], gate_scale=gate_scale, key_valid=seg["valid"],
                                     splits=splits, **cache)
        if not append:
            return out[:, p:]
        self._store_values(seg, key_valid, p, T)
        if T > 1 or n_seg >= self.fold_every:
            self._fold(seg, chunks, n_seg)
        else:
            self.pending = seg
            self.pending_len = n_seg
        return out[:, p:]

    def _with_pending(self, name: str, new: torch.Tensor | None) -> torch.Tensor | None:
        old = self.pending.get(name)
        if new is None or old is None:
            return new
        return torch.cat([old, new], 1)

    def _ensure(self, need: int, like_k, like_v, hq: int, gates: bool, masked: bool) -> None:
        cap = 0 if self.k is None else self.k.shape[1]
        if need <= cap and (not masked or self.valid is not None):
            return
        new_cap = max(need, 2 * cap, 256) if need > cap else cap
        B, _, H, D = like_k.shape

        def grow(old, shape, dtype, fill=0):
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

    def _store_values(self, seg, key_valid, p: int, T: int) -> None:
        """Values never move: write the new ones at their final position now."""
        start = self.folded + p
        g = seg["g"]
        self._ensure(start + T, seg["k"], seg["v"], 0 if g is None else g.shape[2], g is not None, key_valid is not None)
        self.v[:, start:start + T] = seg["v"][:, p:]
        if self.valid is not None:
            self.valid[:, start:start + T] = True if key_valid is None else key_valid

    def _fold(self, seg, chunks, n: int) -> None:
        """Move cache + segment keys to the segment end and empty the pending tail."""
        f = self.folded
        if seg["w"] is not None:
            keys = transport_state(chunks, self.k[:, :f] if f else None, n).movedim(1, 2)
            self.k[:, :f + n] = keys.to(self.k.dtype)
        else:
            self.k[:, f:f + n] = seg["k"]
        g = seg["g"]
        if g is not None:
            if seg["valid"] is not None:
                g = g * seg["valid"][..., None]
            g = g.float()
            if f:
                self.g_end[:, :f] += g.sum(1, keepdim=True)
            self.g_end[:, f:f + n] = gates_to_end(g)
        self.folded = f + n
        self.pending = {}
        self.pending_len = 0
