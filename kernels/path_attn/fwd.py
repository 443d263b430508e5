"""Triton forward for PaTH, PaTH-FoX, FoX and plain causal attention, with an optional cache.

One program owns BM query rows of one query head: rows of one chunk (BM divides the chunk size C), or
two whole chunks (BM = 2 C; the second chunk's rows score the first chunk at the diagonal step and
move through its transition, after which all walk together). The preparation kernel (`prep.py`)
hands it the rows' queries already moved to their chunk start (q' = H_first ... H_a q_a), the
in-chunk logits, keys transported to their chunk end and each chunk's transition U = W^T (T W).
The program then
  1. scores its own chunk from the in-chunk logits (causal),
  2. walks the earlier chunks of its own super-chunk (S consecutive chunks) right to left: score
     r.k' of the chunk, then r <- r - r U (a dense D x D product: per key token D / C times the
     score product),
  2b. walks the earlier super-chunks right to left: score r.k'' of their S C keys (transported to
     the super-chunk end), then one r <- r - r U_super (U_super = I - P_last ... P_first over the
     super-chunk's chunks, P = I - U): per key token D / (S C) times the score product,
  3. scores the cache (keys already transported to the segment start) with the final r,
with an online softmax in base 2, so nothing of size T x T exists. r stays in float32 and is
rounded to the input dtype only as a matmul operand. FoX / PaTH-FoX gates enter as gate_scale
times the sum of log gates between key and query, built from in-chunk sums and a running
per-row offset along the walk (see `chunks.py`); the coarse walk adds super-chunk totals to that
offset and reads each key's sum to its super-chunk end. Offsets are int64 (inputs past 2^31
elements). The super-chunk keys and U_super are made once per key head (not per query block) by
`coarse.py` from the preparation's float32 keys and T W, and rounded to the input dtype once;
S = 1 is the walk over every chunk.

Cache-only splits (flash-decoding style) are allowed when the segment is one chunk: then every
program already holds its final r, and the per-split results are merged by log-sum-exp.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from path_eval.kernels.path_attn.chunks import Transport, chunk_gates, super_chunk_gates
from path_eval.kernels.path_attn.coarse import super_chunk_transport_triton
from path_eval.kernels.path_attn.prep import Prepared, chunk_queries, chunk_transitions, prepare_path, prepared, unit_stride
from path_eval.kernels.path_attn.supported import DTYPES, HEAD_DIMS

MASKED = tl.constexpr(float("-inf"))
LOG2E = 1.4426950408889634


@triton.jit
def _softmax_step(acc, m_i, l_i, s, v, qk_scale, DOT_PREC: tl.constexpr):
    """One online-softmax step over a block of logits s in score units (r.k, gate terms divided
    by qk_scale); m_i and l_i in base 2. The scale enters exp2's argument as one fused multiply-add
    per logit instead of a multiply of its own: at D = 64 the element-wise work per logit costs as
    much as its two products on the tensor cores. Needs qk_scale > 0 (`path_attention` checks).
    Masked logits are -inf, so that they weigh exactly 0: a finite mask value M would leave the
    fused M * qk_scale - m its rounding residual, up to half an ulp of |M * qk_scale| (about 1e22 for
    M = -1e30), and exp2 of that overflows on rows whose keys so far are all masked (padding). Such
    rows keep m = -inf and take 0 as the reference, which leaves acc and l at 0."""
    m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_ref)
    p = tl.exp2(s * qk_scale - m_ref[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PREC)
    return acc, m_new, l_i


@triton.jit
def _path_attn_fwd(
    Q, K, V, U, S, G, KS, US, GE, GT, KOK, KC, VC, GC, COK, O, LSE,
    T, L, HQ, GROUP, qk_scale, gate_to_score, cache_per_split,
    sq_b, sq_h, sq_n, sq_g, sq_c,
    sk_b, sk_h, sk_t,
    sv_b, sv_h, sv_t,
    su_b, su_h, su_n,
    ss_b, ss_h, ss_n, ss_g, ss_c,
    sg_b, sg_h, sg_n, sg_g, sg_c,
    sks_b, sks_h, sks_t,
    sus_b, sus_h, sus_n,
    sge_b, sge_n, sge_h, sge_t,
    sgt_b, sgt_n,
    skok_b,
    skc_b, skc_t, skc_h,
    svc_b, svc_t, svc_h,
    sgc_b, sgc_t,
    scok_b,
    so_s, so_b, so_t, so_h,
    slse_s, slse_b, slse_h,
    D: tl.constexpr, CHUNK: tl.constexpr, SUPER: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
    TRANSFORM: tl.constexpr, GATE: tl.constexpr, KEY_MASK: tl.constexpr,
    CACHE: tl.constexpr, CACHE_MASK: tl.constexpr, WRITE_LSE: tl.constexpr, DOT_PREC: tl.constexpr,
    COARSE_STAGES: tl.constexpr = None, COARSE_CHUNKS: tl.constexpr = 1,
):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0)      # longest rows first
    pid_bh = tl.program_id(1)
    split = tl.program_id(2)
    b = (pid_bh // HQ).to(tl.int64)
    hq = (pid_bh % HQ).to(tl.int64)
    h = hq // GROUP
    gi = hq % GROUP
    # BM rows of one chunk (BM <= CHUNK), or of two chunks (BM == 2 CHUNK: the second chunk's rows
    # catch up with the first's at the diagonal step, then all walk together)
    PAIR: tl.constexpr = BM > CHUNK
    row0 = pid_m * BM
    chunk_q = row0 // CHUNK                                  # the first (or only) chunk of the rows
    rows = row0 + tl.arange(0, BM)
    row_chunk = (rows // CHUNK).to(tl.int64)
    rin = rows % CHUNK
    row_ok = rows < T
    d = tl.arange(0, D)
    c_idx = tl.arange(0, CHUNK)

    q_base = Q + b * sq_b + h * sq_h + gi * sq_g
    r = tl.load(q_base + row_chunk[:, None] * sq_n + rin[:, None] * sq_c + d[None, :], mask=row_ok[:, None],
                other=0.0).to(tl.float32)
    if GATE:
        g_base = G + b * sg_b + h * sg_h + gi * sg_g
        gq = tl.load(g_base + row_chunk * sg_n + rin * sg_c, mask=row_ok, other=0.0)
        decay = gq  # sum of log gates from the row back to the start of the chunk being scored
    k_base = K + b * sk_b + h * sk_h
    v_base = V + b * sv_b + h * sv_h
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)

    if split == 0:
        # 1. the diagonal step: the rows' own chunk; with PAIR one chunk of columns at a time, the
        # second chunk's rows scoring the first chunk's keys at its end, where their queries start
        for half in tl.static_range(2 if PAIR else 1):
            col_chunk = chunk_q + half
            cols = col_chunk * CHUNK + c_idx
            col_ok = cols < T
            same = row_chunk == col_chunk
            if TRANSFORM:
                s_base = S + b * ss_b + h * ss_h + gi * ss_g
                s = tl.load(s_base + row_chunk[:, None] * ss_n + rin[:, None] * ss_c + c_idx[None, :],
                            mask=(row_ok & same)[:, None], other=0.0)
                if PAIR and half == 0:
                    k = tl.load(k_base + cols.to(tl.int64)[:, None] * sk_t + d[None, :])
                    s = tl.where(same[:, None], s, tl.dot(r.to(k.dtype), tl.trans(k), input_precision=DOT_PREC))
            else:
                k = tl.load(k_base + cols.to(tl.int64)[:, None] * sk_t + d[None, :], mask=col_ok[:, None], other=0.0)
                s = tl.dot(r.to(k.dtype), tl.trans(k), input_precision=DOT_PREC)
            if GATE:
                gk = tl.load(g_base + col_chunk.to(tl.int64) * sg_n + c_idx * sg_c, mask=col_ok, other=0.0)
                row_gate = gq
                if PAIR and half == 0:  # the second chunk's rows add the key's sum to the first chunk's end
                    total = tl.load(g_base + col_chunk.to(tl.int64) * sg_n + (CHUNK - 1) * sg_c)
                    row_gate += tl.where(same, 0.0, total)
                s += (row_gate * gate_to_score)[:, None] - (gk * gate_to_score)[None, :]
            ok = (cols[None, :] <= rows[:, None]) & col_ok[None, :]
            if KEY_MASK:
                ok &= (tl.load(KOK + b * skok_b + cols, mask=col_ok, other=0) != 0)[None, :]
            s = tl.where(ok, s, MASKED)
            v = tl.load(v_base + cols.to(tl.int64)[:, None] * sv_t + d[None, :], mask=col_ok[:, None], other=0.0)
            acc, m_i, l_i = _softmax_step(acc, m_i, l_i, s, v, qk_scale, DOT_PREC)
        if PAIR:  # the second chunk's rows move through the first chunk to its start
            second = row_chunk != chunk_q
            if TRANSFORM:
                u = tl.load(U + b * su_b + h * su_h + chunk_q.to(tl.int64) * su_n + d[:, None] * D + d[None, :])
                r -= tl.where(second[:, None], tl.dot(r.to(u.dtype), u, input_precision=DOT_PREC), 0.0)
            if GATE:
                decay += tl.where(second, tl.load(g_base + chunk_q.to(tl.int64) * sg_n + (CHUNK - 1) * sg_c), 0.0)

        # 2. earlier chunks of the row's own super-chunk (all earlier chunks when SUPER == 1), right to left
        super_q = chunk_q // SUPER
        fine_chunks = chunk_q - super_q * SUPER if SUPER > 1 else chunk_q
        for jj in range(0, fine_chunks):
            j = chunk_q - 1 - jj
            cols = j * CHUNK + c_idx
            k = tl.load(k_base + cols.to(tl.int64)[:, None] * sk_t + d[None, :])
            s = tl.dot(r.to(k.dtype), tl.trans(k), input_precision=DOT_PREC)
            if GATE:
                gk = tl.load(g_base + j.to(tl.int64) * sg_n + c_idx * sg_c)
                total = tl.load(g_base + j.to(tl.int64) * sg_n + (CHUNK - 1) * sg_c)
                s += (decay * gate_to_score)[:, None] + ((total - gk) * gate_to_score)[None, :]
                decay += total
            if KEY_MASK:
                s = tl.where((tl.load(KOK + b * skok_b + cols) != 0)[None, :], s, MASKED)
            v = tl.load(v_base + cols.to(tl.int64)[:, None] * sv_t + d[None, :])
            acc, m_i, l_i = _softmax_step(acc, m_i, l_i, s, v, qk_scale, DOT_PREC)
            if TRANSFORM:
                u = tl.load(U + b * su_b + h * su_h + j.to(tl.int64) * su_n + d[:, None] * D + d[None, :])
                r -= tl.dot(r.to(u.dtype), u, input_precision=DOT_PREC)

        # 2b. earlier super-chunks, right to left: their keys at the super-chunk end, in blocks of
        # KEY_BLOCK keys, scored with one rounded r; then one dense step r <- r - r U_super
        if SUPER > 1:
            KEY_BLOCK: tl.constexpr = CHUNK * COARSE_CHUNKS
            key_idx = tl.arange(0, KEY_BLOCK)
            ks_base = KS + b * sks_b + h * sks_h
            for ss in range(0, super_q):
                sc = (super_q - 1 - ss).to(tl.int64)
                r_op = r.to(KS.dtype.element_ty)
                if GATE:
                    row_gate = decay * gate_to_score
                for blk in tl.range(0, SUPER * CHUNK // KEY_BLOCK, num_stages=COARSE_STAGES):
                    pos = blk * KEY_BLOCK + key_idx
                    key_pos = sc * (SUPER * CHUNK) + pos  # int64
                    # names of their own: a key block of two chunks must not rebind the fine walk's tiles
                    kb = tl.load(ks_base + key_pos[:, None] * sks_t + d[None, :])
                    sb = tl.dot(r_op, tl.trans(kb), input_precision=DOT_PREC)
                    if GATE:
                        gkb = tl.load(GE + b * sge_b + sc * sge_n + hq * sge_h + pos * sge_t)
                        sb += row_gate[:, None] + (gkb * gate_to_score)[None, :]
                    if KEY_MASK:
                        sb = tl.where((tl.load(KOK + b * skok_b + key_pos) != 0)[None, :], sb, MASKED)
                    vb = tl.load(v_base + key_pos[:, None] * sv_t + d[None, :])
                    acc, m_i, l_i = _softmax_step(acc, m_i, l_i, sb, vb, qk_scale, DOT_PREC)
                if GATE:
                    decay += tl.load(GT + b * sgt_b + sc * sgt_n + hq)
                u = tl.load(US + b * sus_b + h * sus_h + sc * sus_n + d[:, None] * D + d[None, :])
                r -= tl.dot(r_op, u, input_precision=DOT_PREC)

    # 3. the cache, keys transported to the segment start
    if CACHE:
        lo = split * cache_per_split
        hi = tl.minimum(L, lo + cache_per_split)
        n_idx = tl.arange(0, BN)
        r_op = r.to(KC.dtype.element_ty)
        for start in range(lo, hi, BN):
            cols = start + n_idx
            col_ok = cols < hi
            ck = cols.to(tl.int64)
            kc = tl.load(KC + b * skc_b + h * skc_h + ck[:, None] * skc_t + d[None, :], mask=col_ok[:, None], other=0.0)
            s = tl.dot(r_op, tl.trans(kc), input_precision=DOT_PREC)
            if GATE:
                gc = tl.load(GC + b * sgc_b + hq + ck * sgc_t, mask=col_ok, other=0.0)
                s += (decay * gate_to_score)[:, None] + (gc * gate_to_score)[None, :]
            if CACHE_MASK:
                col_ok &= tl.load(COK + b * scok_b + ck, mask=col_ok, other=0) != 0
            s = tl.where(col_ok[None, :], s, MASKED)
            vc = tl.load(VC + b * svc_b + h * svc_h + ck[:, None] * svc_t + d[None, :], mask=col_ok[:, None], other=0.0)
            acc, m_i, l_i = _softmax_step(acc, m_i, l_i, s, vc, qk_scale, DOT_PREC)

    l_safe = tl.where(l_i > 0, l_i, 1.0)
    out = acc / l_safe[:, None]
    o_ptrs = O + split.to(tl.int64) * so_s + b * so_b + hq * so_h + rows.to(tl.int64)[:, None] * so_t + d[None, :]
    tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=row_ok[:, None])
    if WRITE_LSE:
        # a split with no unmasked key: finite, so that rows with none in any split merge to 0, not NaN
        lse = tl.where(l_i > 0, m_i + tl.log2(l_safe), -1.0e30)
        tl.store(LSE + split.to(tl.int64) * slse_s + b * slse_b + hq * slse_h + rows, lse, mask=row_ok)


def default_blocks(head_dim: int) -> tuple[int, int]:
    """(chunk size C, query rows per program BM). 64 x 64 keeps r, the accumulator and the scores in
    registers; at D = 128 a chunk of 128 (dense transition at 1.5x attention's matmul work instead
    of 2x) needs more shared memory than an H200 has with two pipeline stages. Two chunks a program
    (BM = 128) made plain attention faster on an H200 but PaTH slower: 128 rows need 8 warps, one
    program per SM, and spill at D = 128 (results/bench/block_rows_h200.json)."""
    return 64, 64


def default_super_chunks(head_dim: int, tokens: int) -> int:
    """Chunks per super-chunk of the coarse walk (1: no coarse walk). The coarse walk costs the
    super-chunk transport up front (`coarse.py`, O(T D^2)) and saves a part of the walk, which grows
    with T^2, so S grows with T. The fastest S measured on an H200 at each length: at D = 128, S = 16
    from 8K tokens and S = 8 at 4K (results/bench/kernels_coarse_walk.json); at D = 64, S = 1 at 4K
    and S = 16 from 8K (results/bench/kernels_coarse_walk_d64.json)."""
    if head_dim < 64:  # not measured: the walk over every chunk
        return 1
    if head_dim == 64:
        return 16 if tokens >= 8192 else 1
    return 16 if tokens >= 8192 else 8 if tokens >= 4096 else 1


# Warps and pipeline stages are tuned on the GPU (first call per kernel variant; the timings are kept
# in Triton's cache directory, so later processes skip the tuning); the interpreter cannot autotune,
# so it gets one fixed configuration, as do GPU test runs with PATH_EVAL_AUTOTUNE=0 (tuning every
# test shape costs minutes).
TUNED = os.environ.get("TRITON_INTERPRET") != "1" and os.environ.get("PATH_EVAL_AUTOTUNE") != "0"
CAPPED = 168  # registers: three programs of 4 warps per SM
# The one configuration of untuned launches; tests set the coarse walk's options here to run their code
UNTUNED = dict(num_warps=4, num_stages=1)


# Every configuration the forward can take; `_prune` picks those tuned for a variant. COARSE_STAGES
# pipelines the coarse walk's loop over a super-chunk's keys deeper than the rest of the kernel (whose
# walk over single chunks also holds a D x D transition per step): at D = 128 two stages everywhere
# take 144 KB of shared memory, one program per SM, where one stage but in that loop keeps two
# (measured in results/bench/kernels_forward_h200.json). COARSE_CHUNKS = 2 takes that loop's keys two
# chunks at a time: half the online-softmax steps, on 64 x 128 logits; it wins at D = 64 and loses
# at D = 128, where the kernel already spills (results/bench/coarse_loop_h200.json).
CONFIGS = ([triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8) for s in (1, 2, 3)]
           + [triton.Config({}, num_warps=4, num_stages=2, maxnreg=CAPPED)]
           + [triton.Config({"COARSE_STAGES": c}, num_warps=4, num_stages=1) for c in (2, 3)]
           + [triton.Config({"COARSE_STAGES": 3}, num_warps=4, num_stages=2, maxnreg=CAPPED)]
           + [triton.Config({"COARSE_CHUNKS": 2}, num_warps=4, num_stages=3)]
           + [triton.Config({"COARSE_CHUNKS": 2}, num_warps=4, num_stages=2, maxnreg=CAPPED)])
TUNING_KEY = ["D", "CHUNK", "SUPER", "BM", "TRANSFORM", "GATE", "CACHE", "KEY_MASK"]


def _prune(configs, named_args, **kwargs):
    """The configurations tuned for a variant. The walk over every chunk: at D <= 64 4 warps at 3
    stages only, at D = 128 every uncapped one. Of every configuration timed on an H200 for the
    760M shape's prefill variants (results/bench/forward_autotune.json) 4 warps at 2 stages capped at
    168 registers (three programs per SM, about 100 bytes spilled) was the fastest and 4 warps at 3
    stages close to it; fewer stages uncapped and 8 warps were slower. The walk over every chunk
    does not tune the capped one, though it was faster on a cache (the one such variant timed): it
    then compiles one configuration and times none, because each tuned configuration is a compile
    of its own and a cold start's time is mostly compiling (results/bench/end_to_end_h200_cold.json).
    The coarse walk at D <= 64 tunes three: its key loop two chunks a step at 4 warps and 3 stages,
    and capped, and the capped one with that loop pipelined over 3 stages: of six timed for PaTH and
    PaTH-FoX at 8K and 16K (results/bench/coarse_loop_h200.json) these held the fastest every time.
    At D = 128 every uncapped one but those two chunks a step (slower there). D = 16 and 32 follow
    D = 64, unmeasured. Two chunks a step need an even super-chunk."""
    meta = {**named_args, **kwargs}  # constexprs arrive in kwargs (Triton 3.x)
    coarse = meta["SUPER"] > 1
    if not coarse:
        configs = [c for c in configs if not c.kwargs]
    elif meta["SUPER"] % 2:
        configs = [c for c in configs if "COARSE_CHUNKS" not in c.kwargs]
    if meta["D"] > 64:
        return [c for c in configs if c.maxnreg is None and "COARSE_CHUNKS" not in c.kwargs]
    if not coarse:
        return [c for c in configs if c.maxnreg is None and c.num_warps == 4 and c.num_stages == 3]
    return [c for c in configs if "COARSE_CHUNKS" in c.kwargs or c.kwargs.get("COARSE_STAGES") == 3 and c.maxnreg]


if TUNED:
    _path_attn_fwd = triton.autotune(configs=CONFIGS, key=TUNING_KEY, cache_results=True,
                                     prune_configs_by={"early_config_prune": _prune})(_path_attn_fwd)


def path_attention(q, k, v, *, scale: float, w=None, beta=None, g=None, gate_scale: float = 1.0,
                   key_valid=None, cache_k=None, cache_v=None, cache_g=None, cache_valid=None,
                   chunk_size: int | None = None, block_m: int | None = None, splits: int = 1,
                   cache_block: int = 64, transport: bool = False, super_chunks: int | None = None,
                   accurate_preparation: bool = False) -> tuple[torch.Tensor, Transport | None]:
    """Causal attention of a segment (after an optional cache); returns (out [B, T, HQ, D], the
    segment's `Transport` for moving a cache when `transport` is asked for and the variant is PaTH).

    q [B, T, HQ, D]; k, v [B, T, H, D]; PaTH: w [B, T, H, D] unit rows and beta [B, T, H];
    FoX-style gates: g [B, T, HQ] log forget gates; key_valid [B, T] bool (False = padding).
    Cache: cache_k (transported to the segment start) / cache_v [B, L, H, D], cache_g [B, L, HQ]
    (sum of log gates from each key to the segment start), cache_valid [B, L] bool.
    super_chunks: chunks per super-chunk of the coarse walk (PaTH only; None: `default_super_chunks`,
    1: every earlier chunk walked one by one). The returned `Transport` stays per chunk.
    block_m: query rows a program, a divisor of the chunk size or twice it (two chunks a program; one
    chunk where the segment has one chunk, the cache is split or a super-chunk has an odd count).
    accurate_preparation: the preparation's products in float32 accuracy for 16-bit inputs too
    (`prep.product_precision`: more accurate where beta is near 2; its cost is measured on a GPU
    before it becomes the default).
    """
    B, T, HQ, D = q.shape
    if q.dtype not in DTYPES:
        raise ValueError(f"the Triton kernels take float32, float16 or bfloat16, not {q.dtype} "
                         "(float64 is for the reference and torch backends)")
    if D not in HEAD_DIMS:
        raise ValueError(f"the Triton kernels take head dims {', '.join(map(str, HEAD_DIMS[:-1]))} or {HEAD_DIMS[-1]}, "
                         f"not {D} (use the torch backend: attention='torch')")
    if not scale > 0:  # the online softmax takes row maxima of unscaled logits (`_softmax_step`)
        raise ValueError(f"the Triton kernels take a positive scale, not {scale} (use the torch backend: attention='torch')")
    C, BM = default_blocks(D)
    C, BM = chunk_size or C, block_m or BM
    if T < C:  # a short segment (decoding) runs as one chunk of the next power of two
        C = max(16, triton.next_power_of_2(T))
        BM = min(BM, C)
    if BM > C and BM != 2 * C or BM <= C and C % BM:
        raise ValueError(f"block_m {BM} must divide the chunk size {C} or be twice it")
    if T % C:  # whole chunks (the kernel loads key blocks without bounds checks): pad, masked as padding
        pad = lambda t: None if t is None else F.pad(t, (0, 0) * (t.dim() - 2) + (0, C - T % C))  # noqa: E731
        valid = torch.ones(B, T, dtype=torch.bool, device=q.device) if key_valid is None else key_valid
        q, k, v, w, beta, g, key_valid = map(pad, (q, k, v, w, beta, g, valid))
    if key_valid is not None:  # padding must not transform or decay anything
        beta = None if beta is None else beta * key_valid[..., None]
        g = None if g is None else g * key_valid[..., None]
    size = default_super_chunks(D, q.shape[1]) if super_chunks is None else super_chunks
    if size < 1:
        raise ValueError(f"super_chunks must be 1 or more, not {size}")
    if BM > C and (q.shape[1] <= C or splits > 1 or size > 1 and size % 2):
        BM = C  # two chunks a program need two chunks, no cache splits, and pairs inside super-chunks
    prep, coarse = (None, None) if w is None else prepare_walk(q, k, w, beta, g, C, size, transport,
                                                               accurate_preparation)
    out = _launch(q, k, v, g, prep, coarse, scale, gate_scale, key_valid, cache_k, cache_v, cache_g, cache_valid,
                  C, BM, splits, cache_block)
    return out[:, :T], None if prep is None else prep.transport


@dataclass
class Coarse:
    """The coarse walk's inputs: `size` chunks per super-chunk; keys at their super-chunk end k
    [B, H, count * size * C, D] and U [B, H, count, D, D] in the input dtype (rounded once, from
    float32); for gates, each key's log-gate sum to its super-chunk end g_end [B, count, HQ, size * C]
    and each super-chunk's total g_total [B, count, HQ], float32."""

    size: int
    k: torch.Tensor
    U: torch.Tensor
    g_end: torch.Tensor | None
    g_total: torch.Tensor | None


def prepare_walk(q, k, w, beta, g, chunk_size: int, super_chunks: int,
                 transport: bool, accurate: bool = False) -> tuple[Prepared, Coarse | None]:
    """The PaTH preparation (with its per-chunk `Transport` when `transport` is asked for) and the
    coarse walk's inputs, or None when the segment has no whole super-chunk before its last chunk's
    (the only super-chunks a coarse walk reads). Whole chunks in; g as the forward takes it or None.
    The super-chunk transport runs between the transition and query kernels, so that the float32
    keys it reads are freed (unless the `Transport` keeps them) before the queries are made: with
    Cm in the logits buffer (`chunk_transitions`), three float32 buffers of the queries' size are
    alive at once instead of five."""
    count = (q.shape[1] // chunk_size - 1) // super_chunks
    if super_chunks == 1 or count == 0:
        return prepare_path(q, k, w, beta, chunk_size, transport, accurate=accurate), None
    q, k, w = unit_stride(q, k, w)
    t = chunk_transitions(k, w, beta, q.shape[2] // k.shape[2], chunk_size, transport, keys32=True, accurate=accurate)
    keys, U = super_chunk_transport_triton(t.k32, w, t.tw, super_chunks, count, q.dtype, accurate)
    if not transport:
        t = replace(t, k32=None)
    qs = chunk_queries(q, k, w, t, accurate)
    g_end, g_total = (None, None) if g is None else super_chunk_gates(g.float(), super_chunks * chunk_size, count)
    return prepared(qs, t, transport), Coarse(super_chunks, keys, U, g_end, g_total)


def _launch(q, k, v, g, prep: Prepared | None, coarse: Coarse | None, scale, gate_scale, key_valid, cache_k, cache_v,
            cache_g, cache_valid, C, BM, splits, cache_block) -> torch.Tensor:
    """q, k, v, g as given (views, no copies, whole chunks); `prep` the PaTH preparation or None;
    `coarse` the coarse walk's inputs or None (every earlier chunk walked one by one)."""
    B, T, HQ, D = q.shape
    H = k.shape[2]
    group = HQ // H
    n = T // C
    dt = q.dtype
    transform = prep is not None
    if transform:  # queries at their chunk start (float32), keys at their chunk end, transitions
        Q, S, K, U = prep.q, prep.intra, prep.k, prep.U
    else:          # plain keys and queries, read in place
        Q = q.view(B, n, C, H, group, D).permute(0, 3, 1, 4, 2, 5)  # [B, H, N, group, C, D]
        K = k.permute(0, 2, 1, 3)
        U = S = q.new_empty(1, 1, 1, 1, 1, 1)
    V = v.permute(0, 2, 1, 3)
    if g is not None:
        G = chunk_gates(g, n, C, H, torch.float32)                     # [B, H, N, group, C]
    else:
        G = q.new_empty(1, 1, 1, 1, 1, dtype=torch.float32)
    if coarse is not None:
        KS, US = coarse.k, coarse.U
        GE, GT = (coarse.g_end, coarse.g_total) if g is not None else (G, G)
    else:
        KS = US = q.new_empty(1, 1, 1, 1)
        GE = GT = G
    kok = (key_valid.to(torch.int8).contiguous() if key_valid is not None
           else q.new_empty(1, 1, dtype=torch.int8))
    L = 0 if cache_k is None else cache_k.shape[1]
    has_cache = L > 0
    if splits > 1 and (transform or g is not None) and n > 1:
        raise ValueError("cache splits need a one-chunk segment (the split programs skip the walk)")
    splits = max(1, min(splits, -(-L // cache_block))) if has_cache else 1
    per_split = -(-L // splits) if has_cache else 0
    per_split = -(-per_split // cache_block) * cache_block if has_cache else 0
    if has_cache:
        kc, vc = cache_k, cache_v
        gc = cache_g.float() if cache_g is not None else q.new_empty(1, 1, 1, dtype=torch.float32)
        gc = gc if gc.stride(-1) == 1 else gc.contiguous()        # read in place (heads innermost)
        cok = cache_valid.to(torch.int8) if cache_valid is not None else q.new_empty(1, 1, dtype=torch.int8)
    else:
        kc = vc = q.new_empty(1, 1, 1, D)
        gc = q.new_empty(1, 1, 1, dtype=torch.float32)
        cok = q.new_empty(1, 1, dtype=torch.int8)
    if splits == 1:
        out = torch.empty(1, B, T, HQ, D, dtype=dt, device=q.device)
        lse = out.new_empty(1, 1, 1, 1, dtype=torch.float32)
    else:
        out = torch.empty(splits, B, T, HQ, D, dtype=torch.float32, device=q.device)
        lse = torch.empty(splits, B, HQ, T, dtype=torch.float32, device=q.device)
    sq, sk, sv, ss = Q.stride(), K.stride(), V.stride(), S.stride()
    su, sg = U.stride(), G.stride()
    sks, sus, sge, sgt = KS.stride(), US.stride(), GE.stride(), GT.stride()
    prec = "ieee" if dt == torch.float32 else "tf32"
    grid = (triton.cdiv(T, BM), B * HQ, splits)
    _path_attn_fwd[grid](
        Q, K, V, U, S, G, KS, US, GE, GT, kok, kc, vc, gc, cok, out, lse,
        T, L, HQ, group, scale * LOG2E, gate_scale / scale, per_split,
        sq[0], sq[1], sq[2], sq[3], sq[4],
        sk[0], sk[1], sk[2],
        sv[0], sv[1], sv[2],
        su[0], su[1], su[2],
        ss[0], ss[1], ss[2], ss[3], ss[4],
        sg[0], sg[1], sg[2], sg[3], sg[4],
        sks[0], sks[1], sks[2],
        sus[0], sus[1], sus[2],
        sge[0], sge[1], sge[2], sge[3],
        sgt[0], sgt[1],
        kok.stride(0),
        kc.stride(0), kc.stride(1), kc.stride(2),
        vc.stride(0), vc.stride(1), vc.stride(2),
        gc.stride(0), gc.stride(1),
        cok.stride(0),
        out.stride(0), out.stride(1), out.stride(2), out.stride(3),
        lse.stride(0), lse.stride(1), lse.stride(2),
        D=D, CHUNK=C, SUPER=1 if coarse is None else coarse.size, BM=BM, BN=cache_block, TRANSFORM=transform,
        GATE=g is not None, KEY_MASK=key_valid is not None, CACHE=has_cache,
        CACHE_MASK=has_cache and cache_valid is not None,
        WRITE_LSE=splits > 1, DOT_PREC=prec, **({} if TUNED else UNTUNED),
    )
    if splits == 1:
        return out[0]
    weights = torch.softmax(lse * math.log(2.0), dim=0).permute(0, 1, 3, 2)[..., None]  # [S, B, T, HQ, 1]
    return (out * weights).sum(0).to(dt)
