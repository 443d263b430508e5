"""Triton decoding step for PaTH, PaTH-FoX, FoX and plain attention on a `PathKVCache`.

The cache's state between folds: keys before `folded` (f) transported to position f (K~), the
pending tail's keys transported to the newest position (k^_b = H_t ... H_{b+1} k_b, float32), the
tail's product P = H_f ... H_t (float32 D x D per key head) and the tail's cumulative log gates.
A new token t (q, k, v, w, beta, g) scores
    cache key j:  (P q') . K~_j     tail key b:  q' . k^_b     itself:  q . k       (q' = H_t q)
and then the state moves on: P <- P H_t, k^_b <- H_t k^_b, k^_t = k (rank-one updates of the tail
only). So a step reads K~ and V once, as plain attention's decode does, with no rewrite of the
cache; `PathKVCache` folds P into K~ in place (`fold.py`) when the tail is full.

The folded and pending lengths are read from `cache.lengths` in device memory, not passed as
launch arguments, so a step captured once in a CUDA graph replays at every later position (the
number of cache splits, fixed at capture, only spreads the work).

Two launches per step: `_decode_attend`, one program per (cache split, batch x query head), a
partial softmax over its split (split 0 also takes the tail and the token itself); `_decode_commit`,
one program per batch x query head, merges the splits by log-sum-exp, writes the output, and (one
program per key head) moves the state and stores the token's value at its final place.
Reference: the definition in `naive.py`; tests/kernels compare decoding with it token by token.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

MASKED = tl.constexpr(-1.0e30)
LOG2E = 1.4426950408889634


@triton.jit
def _online_step(acc, m_i, l_i, s, v):
    """Online softmax (base 2) of one query row over a block: s [N], v [N, D]."""
    m_new = tl.maximum(m_i, tl.max(s, 0))
    alpha = tl.exp2(m_i - m_new)
    p = tl.exp2(s - m_new)
    return acc * alpha + tl.sum(p[:, None] * v, 0), m_new, l_i * alpha + tl.sum(p, 0)


@triton.jit
def _heads(pid, HQ, GROUP):
    """Batch row, query head and key head of program `pid`, as int64 (offsets past 2^31)."""
    b = (pid // HQ).to(tl.int64)
    hq = (pid % HQ).to(tl.int64)
    return b, hq, hq // GROUP


@triton.jit
def _lengths(LEN):
    """The cache's folded length and pending-tail length, read from device memory so that one
    captured step (a CUDA graph) serves every position."""
    return tl.load(LEN), tl.load(LEN + 1)


@triton.jit
def _new_token(Q, WN, BETA, GN, OKN, GT, b, hq, h, pend, HQ,
               sq_b, sq_h, sw_b, sw_h, sb_b, sb_h, sg_b, sg_h, sok_b,
               D: tl.constexpr, WINDOW: tl.constexpr, TRANSFORM: tl.constexpr, GATE: tl.constexpr,
               MASK: tl.constexpr):
    """The token's query q, q' = H_t q, w, beta (zero at padding), its validity, and G: the tail's
    log-gate sum up to and including it (the last three as one-element tensors)."""
    d = tl.arange(0, D)
    one = tl.arange(0, 1)
    q = tl.load(Q + b * sq_b + hq * sq_h + d).to(tl.float32)
    ok = one == 0
    if MASK:
        ok = tl.load(OKN + b * sok_b + one) != 0
    qp = q
    w = q
    beta = tl.zeros([1], tl.float32)
    if TRANSFORM:
        w = tl.load(WN + b * sw_b + h * sw_h + d).to(tl.float32)
        beta = tl.where(ok, tl.load(BETA + b * sb_b + h * sb_h + one).to(tl.float32), 0.0)
        qp = q - beta * tl.sum(q * w, 0) * w
    G = tl.zeros([1], tl.float32)
    if GATE:
        gn = tl.where(ok, tl.load(GN + b * sg_b + hq * sg_h + one).to(tl.float32), 0.0)
        G = tl.load(GT + (b * WINDOW + pend - 1) * HQ + hq + one, mask=one < pend, other=0.0) + gn
    return q, qp, w, beta, ok, G


@triton.jit(do_not_specialize=["cap"])  # a cache reserved to a new size keeps the compiled step
def _decode_attend(
    Q, KN, VN, WN, BETA, GN, OKN,
    KC, VC, GE, CV, KT, P, GT, TV, OP, LSE, LEN,
    cap, HQ, GROUP, qk_scale, gate_scale,
    sq_b, sq_h, sk_b, sk_h, sv_b, sv_h, sw_b, sw_h, sb_b, sb_h, sg_b, sg_h, sok_b,
    D: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr, WINDOW: tl.constexpr,
    TRANSFORM: tl.constexpr, GATE: tl.constexpr, MASK: tl.constexpr,
):
    split = tl.program_id(0)
    pid = tl.program_id(1)
    b, hq, h = _heads(pid, HQ, GROUP)
    H = HQ // GROUP
    d = tl.arange(0, D)
    L, pend = _lengths(LEN)
    per_split = tl.cdiv(tl.cdiv(tl.maximum(L, 1), tl.num_programs(0)), 64) * 64
    q, qp, w, beta, ok, G = _new_token(Q, WN, BETA, GN, OKN, GT, b, hq, h, pend, HQ, sq_b, sq_h, sw_b, sw_h,
                                       sb_b, sb_h, sg_b, sg_h, sok_b, D, WINDOW, TRANSFORM, GATE, MASK)
    qt = qp
    if TRANSFORM:  # the query at the segment start: P q'
        pm = tl.load(P + (b * H + h) * D * D + d[:, None] * D + d[None, :])
        qt = tl.sum(pm * qp[None, :], 1)
    acc = tl.zeros([D], tl.float32)
    m_i = tl.full([1], -float("inf"), tl.float32)
    l_i = tl.zeros([1], tl.float32)
    row = H * D  # cache and tail rows: [B, position, H, D]
    lo = split * per_split
    hi = tl.minimum(L, lo + per_split)
    n_idx = tl.arange(0, BN)
    for start in tl.range(lo, hi, BN, num_stages=STAGES):
        cols = (start + n_idx).to(tl.int64)
        col_ok = cols < hi
        at = (b * cap + cols) * row + h * D
        # keys and values issued together: the step is bound by reading them (a padded key's value is
        # finite and gets weight 0)
        kc = tl.load(KC + at[:, None] + d[None, :], mask=col_ok[:, None], other=0.0)
        vc = tl.load(VC + at[:, None] + d[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.sum(kc.to(tl.float32) * qt[None, :], 1) * qk_scale
        if GATE:
            s += (tl.load(GE + (b * cap + cols) * HQ + hq, mask=col_ok, other=0.0) + G) * gate_scale
        if MASK:
            col_ok &= tl.load(CV + b * cap + cols, mask=col_ok, other=0) != 0
        s = tl.where(col_ok, s, MASKED)
        acc, m_i, l_i = _online_step(acc, m_i, l_i, s, vc.to(tl.float32))
    if split == 0:  # the pending tail and the token itself
        tb = tl.arange(0, WINDOW)
        in_tail = tb < pend
        me = tb == pend
        trow = (b * WINDOW + tb).to(tl.int64)
        kt = tl.load(KT + trow[:, None] * row + h * D + d[None, :], mask=in_tail[:, None], other=0.0)
        kn = tl.load(KN + b * sk_b + h * sk_h + d).to(tl.float32)
        s = tl.where(me, tl.sum(q * kn, 0), tl.sum(kt * qp[None, :], 1)) * qk_scale
        if GATE:
            s += tl.where(in_tail, G - tl.load(GT + trow * HQ + hq, mask=in_tail, other=0.0), 0.0) * gate_scale
        t_ok = in_tail | me
        if MASK:
            t_ok &= tl.where(me, ok, tl.load(TV + trow, mask=in_tail, other=1) != 0)
        s = tl.where(t_ok, s, MASKED)
        vt = tl.load(VC + ((b * cap + L + tb) * row + h * D)[:, None] + d[None, :], mask=in_tail[:, None],
                     other=0.0).to(tl.float32)
        vn = tl.load(VN + b * sv_b + h * sv_h + d).to(tl.float32)
        vt = tl.where(me[:, None], vn[None, :], vt)
        acc, m_i, l_i = _online_step(acc, m_i, l_i, s, vt)
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    at = split * tl.num_programs(1) + pid
    tl.store(OP + at.to(tl.int64) * D + d, acc / l_safe)
    tl.store(LSE + at + tl.arange(0, 1), tl.where(l_i > 0, m_i + tl.log2(l_safe), -float("inf")))


@triton.jit(do_not_specialize=["cap"])  # a cache reserved to a new size keeps the compiled step
def _decode_commit(
    Q, KN, VN, WN, BETA, GN, OKN,
    VC, KT, P, GT, TV, OP, LSE, O, LEN,
    cap, HQ, GROUP, splits,
    sq_b, sq_h, sk_b, sk_h, sv_b, sv_h, sw_b, sw_h, sb_b, sb_h, sg_b, sg_h, sok_b,
    D: tl.constexpr, WINDOW: tl.constexpr, SPLITS: tl.constexpr,
    TRANSFORM: tl.constexpr, GATE: tl.constexpr, MASK: tl.constexpr,
):
    pid = tl.program_id(0)
    n_prog = tl.num_programs(0)
    b, hq, h = _heads(pid, HQ, GROUP)
    H = HQ // GROUP
    d = tl.arange(0, D)
    L, pend = _lengths(LEN)
    sp = tl.arange(0, SPLITS)
    lse = tl.load(LSE + sp * n_prog + pid, mask=sp < splits, other=-float("inf"))
    wt = tl.exp2(lse - tl.max(lse, 0))
    part = tl.load(OP + (sp * n_prog + pid).to(tl.int64)[:, None] * D + d[None, :], mask=(sp < splits)[:, None],
                   other=0.0)
    out = tl.sum(wt[:, None] * part, 0) / tl.sum(wt, 0)
    tl.store(O + pid.to(tl.int64) * D + d, out.to(O.dtype.element_ty))

    q, qp, w, beta, ok, G = _new_token(Q, WN, BETA, GN, OKN, GT, b, hq, h, pend, HQ, sq_b, sq_h, sw_b, sw_h,
                                       sb_b, sb_h, sg_b, sg_h, sok_b, D, WINDOW, TRANSFORM, GATE, MASK)
    if GATE:
        tl.store(GT + (b * WINDOW + pend) * HQ + hq + tl.arange(0, 1), G)
    if hq % GROUP == 0:  # one program per key head moves the state
        row = H * D
        vn = tl.load(VN + b * sv_b + h * sv_h + d)
        tl.store(VC + (b * cap + L + pend) * row + h * D + d, vn.to(VC.dtype.element_ty))
        kn = tl.load(KN + b * sk_b + h * sk_h + d).to(tl.float32)
        tb = tl.arange(0, WINDOW)
        trow = (b * WINDOW + tb).to(tl.int64)
        kt_ptr = KT + trow[:, None] * row + h * D + d[None, :]
        if TRANSFORM:  # P <- P H_t, tail keys k^ <- H_t k^
            p_ptr = P + (b * H + h) * D * D + d[:, None] * D + d[None, :]
            pm = tl.load(p_ptr)
            tl.store(p_ptr, pm - beta * tl.sum(pm * w[None, :], 1)[:, None] * w[None, :])
            kt = tl.load(kt_ptr, mask=(tb < pend)[:, None], other=0.0)
            kt -= beta * tl.sum(kt * w[None, :], 1)[:, None] * w[None, :]
            tl.store(kt_ptr, tl.where((tb == pend)[:, None], kn[None, :], kt), mask=(tb <= pend)[:, None])
        else:
            tl.store(KT + (b * WINDOW + pend) * row + h * D + d, kn)
        if MASK:
            if hq == 0:
                tl.store(TV + b * WINDOW + pend + tl.arange(0, 1), ok.to(tl.int8))


def decode_step(cache, q, k, v, w, beta, g, key_valid, scale: float, gate_scale: float, splits: int | None):
    """One token (q [B, 1, HQ, D]; k, v, w [B, 1, H, D]; beta [B, 1, H]; g [B, 1, HQ]; key_valid
    [B, 1]) against a `PathKVCache` whose buffers hold room for it; returns out [B, 1, HQ, D].
    `splits` (cache splits) defaults to enough programs to fill the GPU for the cache's planned length
    (`PathKVCache.reserve`); splits past the current length are empty and weigh nothing."""
    B, _, HQ, D = q.shape
    H = k.shape[2]
    # Split as for the longest cache this generation reserved: every step of it, eager or replayed from
    # a graph (where the count is fixed at capture), then splits alike, and gives the same numbers.
    span = max(cache.folded, cache.planned)
    splits = max(1, min(default_splits(span, B * HQ, q.device) if splits is None else splits, triton.cdiv(span, 64)))
    st = cache.step_buffers(splits)
    dummy = st["dummy"]
    q, k, v, w = (t if t is None or t.stride(-1) == 1 else t.contiguous() for t in (q, k, v, w))
    new = (q, k, v, dummy if w is None else w, dummy if beta is None else beta, dummy if g is None else g,
           dummy if key_valid is None else key_valid)
    strides = (q.stride(0), q.stride(2), k.stride(0), k.stride(2), v.stride(0), v.stride(2),
               *_strides(w, 0, 2), *_strides(beta, 0, 2), *_strides(g, 0, 2), *_strides(key_valid, 0))
    flags = dict(TRANSFORM=w is not None, GATE=g is not None, MASK=key_valid is not None)
    state = (cache.tail_k, dummy if cache.P is None else cache.P, dummy if cache.tail_g is None else cache.tail_g,
             dummy if cache.tail_valid is None else cache.tail_valid)
    cap, group = cache.v.shape[1], HQ // H
    _decode_attend[(splits, B * HQ)](
        *new, cache.k, cache.v, dummy if cache.g_end is None else cache.g_end,
        dummy if cache.valid is None else cache.valid, *state, st["part"], st["lse"], cache.lengths,
        cap, HQ, group, scale * LOG2E, gate_scale * LOG2E, *strides,
        D=D, WINDOW=cache.window, **flags, **_attend_launch(B * HQ, _sm_count(q.device)))
    out = torch.empty(B, 1, HQ, D, dtype=q.dtype, device=q.device)
    _decode_commit[(B * HQ,)](
        *new, cache.v, *state, st["part"], st["lse"], out, cache.lengths, cap, HQ, group, splits, *strides,
        D=D, WINDOW=cache.window, SPLITS=triton.next_power_of_2(splits), **flags, num_warps=4)
    return out


def _attend_launch(rows: int, sms: int) -> dict:
    """Block of cached tokens per iteration, pipeline stages and warps of `_decode_attend` for
    `rows` (batch x query heads) on `sms` SMs. Three stages keep the next blocks' keys and values
    in flight while one is reduced, faster than one stage for a 760M layer at 16K tokens on an H200
    (results/bench/decode_launch_configs.json). Blocks of 128 lose at 24 rows (B = 1) and win at
    192 (B = 8), so the cut at the SM count (132) lies between the two measured points."""
    return dict(BN=128 if rows >= sms else 64, STAGES=3, num_warps=4)


def default_splits(cached: int, rows: int, device: torch.device) -> int:
    """Cache splits of a step over `cached` folded tokens for `rows` (batch x query heads): about
    four programs per SM, at least 256 tokens per split, at most 64 splits."""
    return max(1, min(64, triton.cdiv(cached, 256), triton.cdiv(4 * _sm_count(device), rows)))


def _strides(t, *dims) -> tuple[int, ...]:
    return tuple(0 if t is None else t.stride(i) for i in dims)


_SMS: dict = {}


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device (1 off CUDA: the interpreter gains nothing from splits)."""
    if device.type != "cuda":
        return 1
    if device not in _SMS:
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device]
