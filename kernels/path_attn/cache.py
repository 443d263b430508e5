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
    (sum of the log gates of positions j+1 .. folded-1); valid [B, capacity] bool. The pending tail lives in fixed
    buffers of one chunk (`tail`), zero past its end, so a decoding step is one fixed-shape forward
    over the tail with no copies, pads or concatenations."""

    def __init__(self, fold_every: int = FOLD_EVERY):
        if not 1 <= fold_every <= 64:
            raise ValueError(f"fold_every {fold_every} must be in 1..64 (the pending tail is one chunk)")
        self.fold_every = fold_every
        self.window = max(16, 1 << (fold_every - 1).bit_length())  # the forward's chunk for the tail
        self.folded = 0
        self.k = self.v = self.g_end = self.valid = None
        self.tail: dict[str, torch.Tensor] = {}
        self.pending_len = 0

    @property
    def length(self) -> int:
        return self.folded + self.pending_len

    def attend(self, q, k, v, *, scale: float, w=None, beta=None, g=None, gate_scale: float = 1.0,
               key_valid=None, splits: int | None = None, append: bool = True) -> torch.Tensor:
        """Outputs of the new tokens q [B, T, HQ, D] over cache + themselves; appends them unless
        `append` is False."""
        B, T = q.shape[:2]
        if key_valid is None and self.valid is not None:
            key_valid = torch.ones(B, T, dtype=torch.bool, device=q.device)
        new = dict(q=q, k=k, w=w, beta=beta, g=g, valid=key_valid)
        if append and T == 1 and self.pending_len + 1 < self.fold_every:
            return self._decode_step(new, v, scale, gate_scale, splits)
        p = self.pending_len
        if p:
            self._tail(new)  # a padding mask that starts mid-tail: the tail's earlier tokens were valid
        seg = {name: self._with_pending(name, t) for name, t in new.items()}  # the tail's queries: outputs dropped
        seg["v"] = torch.cat([self.v[:, self.folded:self.folded + p], v], 1) if p else v
        n_seg = p + T
        if splits is None:  # a short segment: spread the cache over the SMs (one-chunk segments only)
            splits = self._splits() if n_seg <= 64 else 1
        out, transport = path_attention(seg["q"], seg["k"], seg["v"], scale=scale, w=seg["w"], beta=seg["beta"],
                                        g=seg["g"], gate_scale=gate_scale, key_valid=seg["valid"],
                                        splits=splits, transport=append, **self._cache_args(g is not None))
        if append:
            self._store_values(v, key_valid, self.folded + p, g, k)
            self._fold(seg, transport, n_seg)
        return out[:, p:]

    def _decode_step(self, new, v, scale, gate_scale, splits) -> torch.Tensor:
        """One token into the pending tail, attended as the tail's fixed-size segment: positions after
        it are zero (no transform, no decay) and causally hidden from it."""
        p, f = self.pending_len, self.folded
        self._store_values(v, new["valid"], f + p, new["g"], new["k"], room=self.window)
        tail = self._tail(new)
        for name, t in new.items():
            if t is not None:
                tail[name][:, p] = t[:, 0]
        out, _ = path_attention(tail["q"], tail["k"], self.v[:, f:f + self.window], scale=scale, w=tail.get("w"),
                                beta=tail.get("beta"), g=tail.get("g"), gate_scale=gate_scale,
                                key_valid=tail.get("valid"), splits=self._splits() if splits is None else splits,
                                **self._cache_args("g" in tail))
        self.pending_len = p + 1
        return out[:, p:p + 1]

    def _tail(self, like: dict) -> dict[str, torch.Tensor]:
        """The pending tail's buffers, one chunk long, each allocated on first use (a mask buffer
        starts all valid)."""
        for name, t in like.items():
            if t is not None and name not in self.tail:
                self.tail[name] = torch.full((t.shape[0], self.window, *t.shape[2:]), name == "valid",
                                             dtype=t.dtype, device=t.device)
        return self.tail

    def _with_pending(self, name: str, new: torch.Tensor | None) -> torch.Tensor | None:
        if new is None or not self.pending_len or name not in self.tail:
            return new
        return torch.cat([self.tail[name][:, :self.pending_len], new], 1)

    def _splits(self) -> int:
        return max(1, min(32, self.folded // 1024))

    def _cache_args(self, gates: bool) -> dict:
        f = self.folded
        if not f:
            return {}
        return dict(cache_k=self.k[:, :f], cache_v=self.v[:, :f], cache_g=self.g_end[:, :f] if gates else None,
                    cache_valid=None if self.valid is None else self.valid[:, :f])

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

    def _store_values(self, v, key_valid, start: int, g, like_k, room: int = 0) -> None:
        """Values never move: write the new ones at their final position now (with `room` zeros
        reserved after `start` for the tail window)."""
        T = v.shape[1]
        self._ensure(max(start + T, start + room), like_k, v, 0 if g is None else g.shape[2], g is not None,
                     key_valid is not None)
        self.v[:, start:start + T] = v
        if self.valid is not None:
            self.valid[:, start:start + T] = True if key_valid is None else key_valid

    def _fold(self, seg, transport, n: int) -> None:
        """Move cache + segment keys to the segment end and empty the pending tail."""
        f = self.folded
        if seg["w"] is not None:
            keys = transport_state(transport, self.k[:, :f] if f else None, n).movedim(1, 2)
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
        for name, t in self.tail.items():
            t[:, :self.pending_len] = name == "valid"
        self.pending_len = 0
