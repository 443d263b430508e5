"""The Triton PaTH / FoX kernels against the float64 definition (`naive.py`), on random inputs.

On the CPU they run under TRITON_INTERPRET=1 (set in tests/conftest.py) at small shapes; the
same functions run compiled on a GPU. Inputs follow tests/models/test_attention_backends.py:
beta over (0, 2) with a third of the values within 1e-4 of 2 and some exactly 1, gates strong
enough that decay matters, T not a multiple of any block.
"""
import copy
import itertools

import pytest
import torch

from path_eval.kernels.path_attn.cache import PathKVCache
from path_eval.kernels.path_attn.chunks import gates_to_end, naive_super_chunk_transport, prepare, transport_state
from path_eval.kernels.path_attn.coarse import super_chunk_transport_triton
from path_eval.kernels.path_attn.fold import move_keys, naive_move_keys
from path_eval.kernels.path_attn.fwd import path_attention
from path_eval.kernels.path_attn.naive import naive_attention, naive_transport
from path_eval.kernels.path_attn.prep import prepare_path
from path_eval.numerics import relative_error
from tests.models.test_attention_backends import VARIANTS, random_inputs

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def as_dtype(x, dtype):
    """The inputs of `random_inputs` in the kernel's input dtype (w, beta, g stay float32 as the model gives them)."""
    cast = lambda t, d: None if t is None else t.to(d).to(DEVICE)  # noqa: E731
    return dict(q=cast(x.q, dtype), k=cast(x.k, dtype), v=cast(x.v, dtype), scale=x.scale, w=cast(x.w, torch.float32),
                beta=cast(x.beta, torch.float32), g=cast(x.g, torch.float32), gate_scale=x.gate_scale,
                key_valid=cast(x.key_valid, torch.bool))


def definition(x, rows=slice(None)):
    return naive_attention(x.q, x.k, x.v, scale=x.scale, w=x.w, beta=x.beta, g=x.g, gate_scale=x.gate_scale,
                           key_valid=x.key_valid)[:, rows]


SHAPES = [  # B, T, HQ, H, D, chunk, block_m
    (1, 1, 2, 2, 16, 16, 16),
    (3, 17, 2, 2, 32, 16, 16),
    (2, 100, 4, 2, 16, 32, 16),
    (1, 130, 6, 2, 32, 64, 32),
    (2, 77, 2, 1, 64, 32, 32),
    (1, 70, 2, 1, 128, 64, 32),   # D = 128: the preparation in two column blocks
    # two chunks a program: the second chunk's rows catch up with the first's at the diagonal step;
    # an odd count of chunks leaves the last program half empty
    (2, 100, 4, 2, 16, 16, 32),
    (1, 130, 6, 2, 32, 32, 64),
    (1, 70, 2, 1, 128, 64, 128),
]


@pytest.mark.parametrize("shape", [(1, 16, 2, 2, 16, 16), (2, 64, 4, 2, 32, 32), (1, 192, 3, 1, 64, 64),
                                   (1, 64, 2, 2, 128, 64)], ids=lambda s: "B{}T{}HQ{}H{}D{}C{}".format(*s))
def test_preparation_kernel_matches_torch_preparation(shape):
    """The Triton preparation (UT solve, queries at chunk start, keys at chunk end, in-chunk logits,
    transitions) against `chunks.prepare` in float64, beta near 2 included."""
    B, T, HQ, H, D, C = shape
    x = random_inputs("path", B, T, HQ, H, D, seed=T + D)
    ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
    args = as_dtype(x, torch.float32)
    got = prepare_path(args["q"], args["k"], args["w"], args["beta"], C, state=True)
    ref_t = ref.transport()
    assert relative_error(got.q.double().cpu(), ref.q) <= 1e-5
    assert relative_error(got.intra.double().cpu(), ref.intra) <= 1e-5
    assert relative_error(got.k.double().cpu(), ref.k.flatten(2, 3)) <= 1e-5
    assert relative_error(got.transport.k_end.double().cpu(), ref_t.k_end) <= 1e-5
    assert relative_error(got.U.double().cpu(), ref_t.U) <= 1e-5
    assert relative_error(got.transport.U.double().cpu(), ref_t.U) <= 1e-5


def correlated_w_inputs(B=1, T=128, HQ=2, H=2, D=32):
    """`random_inputs` with nearly parallel w rows and beta near 2: an ill-conditioned I + A."""
    x = random_inputs("path", B, T, HQ, H, D, seed=12)
    g = torch.Generator().manual_seed(13)
    base = torch.randn(B, 1, H, D, generator=g, dtype=torch.float64)
    x.w = torch.nn.functional.normalize(0.9 * base + 0.1 * torch.randn(B, T, H, D, generator=g, dtype=torch.float64), dim=-1)
    x.beta = 2 - 1e-4 * torch.rand(B, T, H, generator=g, dtype=torch.float64)
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_preparation_kernel_with_correlated_w_rows(dtype):
    """Nearly parallel w rows with beta near 2 make (I + A) ill-conditioned: the kernel's solve
    (recursive block inverse of the 16-row blocks, then block forward substitution below them) stays
    within 1e-4 of float64 in float32 arithmetic, a bound that a whole-chunk float32 forward
    substitution does not meet; so does the accurate preparation of 16-bit q and k (its float32
    outputs against float64 on the same rounded inputs)."""
    C = 64
    x = correlated_w_inputs()
    x.q, x.k = x.q.to(dtype).double(), x.k.to(dtype).double()
    ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
    args = as_dtype(x, dtype)
    got = prepare_path(args["q"], args["k"], args["w"], args["beta"], C, state=True, accurate=dtype != torch.float32)
    errors = dict(q=relative_error(got.q.double().cpu(), ref.q), intra=relative_error(got.intra.double().cpu(), ref.intra),
                  k_end=relative_error(got.transport.k_end.double().cpu(), ref.transport().k_end),
                  U=relative_error(got.transport.U.double().cpu(), ref.transport().U))
    print("correlated w", errors)
    assert max(errors.values()) <= 1e-4, errors


@pytest.mark.parametrize("group, D, C, shared", [(1, 64, 32, True), (1, 64, 64, True), (2, 64, 64, False),
                                                 (1, 32, 64, False)])
def test_cm_shares_the_in_chunk_logits_buffer_only_where_one_query_program_reads_it(group, D, C, shared):
    """Cm in the in-chunk-logits buffer (one float32 buffer fewer, which lowers the 64K scoring peak:
    results/bench/extrapolation_64k_h200_prep_memory.json) only
    without grouped queries, where a chunk's one query program reads Cm before writing its logits
    there, and with D >= C, where the solve's scratch for A fits T W's buffer (D > C: a scratch slot
    of C x C would overlap the next chunk's); everything the two kernels make equals the torch
    preparation's either way."""
    from path_eval.kernels.path_attn.prep import chunk_queries, chunk_transitions

    H = 2
    x = random_inputs("path", 1, 128, H * group, H, D, seed=3)
    args = as_dtype(x, torch.float32)
    t = chunk_transitions(args["k"], args["w"], args["beta"], group, C, state=True, keys32=True)
    assert (t.cm.data_ptr() == t.intra.data_ptr()) is shared
    qs = chunk_queries(args["q"], args["k"], args["w"], t)
    intra = t.intra
    ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
    ref_t = ref.transport()
    assert relative_error(intra.double().cpu(), ref.intra) <= 1e-5
    assert relative_error(qs.double().cpu(), ref.q) <= 1e-5
    assert relative_error(t.k_end.flatten(2, 3).double().cpu(), ref.k.flatten(2, 3)) <= 1e-5
    assert relative_error(t.U32.double().cpu(), ref_t.U) <= 1e-5


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}T{}HQ{}H{}D{}C{}BM{}".format(*s))
def test_forward_matches_definition_float32(variant, shape):
    B, T, HQ, H, D, C, BM = shape
    x = random_inputs(variant, B, T, HQ, H, D, seed=T + 13 * HQ)
    out, _ = path_attention(**as_dtype(x, torch.float32), chunk_size=C, block_m=BM)
    assert relative_error(out.double().cpu(), definition(x)) <= 1e-5


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_half_precision_within_rounding(variant, dtype, D):
    """bf16 / fp16 operands, float32 accumulation, r and the UT transform in float32 (with GQA, so
    the preparation's query kernel serves two query heads per key head)."""
    if dtype == torch.bfloat16 and DEVICE == "cpu":
        pytest.skip("the Triton interpreter returns garbage for bfloat16 tensors (numpy has no bfloat16); "
                    "fp16 covers the same code path here and bf16 runs on the GPU")
    x = random_inputs(variant, 2, 150, 4, 2, D, seed=5)
    out, _ = path_attention(**as_dtype(x, dtype), chunk_size=64, block_m=32)
    # the definition on the same rounded inputs: what is left is the kernel's own rounding
    rounded = random_inputs(variant, 2, 150, 4, 2, D, seed=5)
    rounded.q, rounded.k, rounded.v = (t.to(dtype).double() for t in (x.q, x.k, x.v))
    err = relative_error(out.double().cpu(), definition(rounded))
    assert err <= (1.5e-2 if dtype == torch.bfloat16 else 3e-3), err


@pytest.mark.parametrize("variant, beta, correlated, accurate", [
    ("path", 1.9, False, False), ("path", 1.99, True, False), ("path", 2.0, False, False), ("path", 2.0, True, False),
    ("path_fox", 2.0, True, False), ("path", 2.0, True, True), ("path_fox", 1.99, True, True)])
def test_forward_half_precision_as_beta_approaches_two(variant, beta, correlated, accurate):
    """Every beta at 1.9, 1.99 or exactly 2.0 (each transform a near or exact reflection, which the
    PaTH paper warns can be unstable in bf16; the model's beta = 2 sigmoid(.) in float32 reaches 2.0
    exactly), w random or nearly parallel (I + A ill-conditioned): 16-bit operands within the
    half-precision test's bound of the definition on the same rounded inputs (fp16 here, bf16 on a
    GPU). Rounding errors no longer shrink through the transforms near beta = 2, so the error grows
    with the sequence: benchmarks/beta_near_two.py measures it at long T. The accurate preparation
    (products in float32 accuracy) keeps the error within a third of that bound."""
    dtype = torch.bfloat16 if DEVICE == "cuda" else torch.float16
    x = correlated_w_inputs(1, 150, 2, 2, 64) if correlated else random_inputs(variant, 1, 150, 2, 2, 64, seed=21)
    if variant == "path_fox":
        x.g, x.gate_scale = random_inputs(variant, 1, 150, 2, 2, 64, seed=21).g, x.scale
    x.beta = torch.full_like(x.beta, beta)
    out, _ = path_attention(**as_dtype(x, dtype), chunk_size=64, block_m=32, accurate_preparation=accurate)
    x.q, x.k, x.v = (t.to(dtype).double() for t in (x.q, x.k, x.v))
    err = relative_error(out.double().cpu(), definition(x))
    print(f"beta {beta} correlated w {correlated} accurate {accurate}: rel err {err:.2e}")
    assert err <= (1.5e-2 if dtype == torch.bfloat16 else 3e-3) / (3 if accurate else 1), err


@pytest.mark.parametrize("variant, cache, padded", [("path", 0, False), ("path_fox", 0, True), ("path", 20, False),
                                                    ("fox", 0, True), ("path_fox", 20, False)])
def test_definition_of_the_last_rows_equals_its_whole_output(variant, cache, padded):
    """`naive_attention(last_rows=R)`, the long sequences' reference, gives the last R rows of the whole
    output: with grouped queries, gates, padding and a cache of transported keys."""
    T, R = 45, 13
    x = random_inputs(variant, 2, T, 4, 2, 16, seed=cache + 3, pad_left=[0, 7] if padded else None)
    extra = {}
    if cache:
        c = random_inputs(variant, 2, cache, 4, 2, 16, seed=99)
        extra = dict(cache_k=c.k, cache_v=c.v, cache_g=None if c.g is None else c.g.cumsum(1).flip(1),
                     cache_valid=torch.ones(2, cache, dtype=torch.bool))
    run = lambda rows: naive_attention(x.q, x.k, x.v, scale=x.scale, w=x.w, beta=x.beta, g=x.g,  # noqa: E731
                                       gate_scale=x.gate_scale, key_valid=x.key_valid, last_rows=rows, **extra)
    whole = run(None)
    assert run(R).shape == (2, R, 4, 16)
    assert torch.equal(run(R), whole[:, T - R:]) and torch.equal(run(T + 5), whole)


COARSE = [  # variant, B, T, HQ, H, D, super_chunks, pad_left, cache length, rows a program; chunks of 16 rows
    ("path", 2, 170, 4, 2, 32, 4, [0, 37], 0, 16),
    ("path_fox", 2, 150, 4, 2, 16, 2, [0, 21], 0, 16),
    ("path", 1, 160, 2, 1, 64, 2, None, 40, 16),
    ("path_fox", 2, 150, 4, 2, 16, 4, [0, 50], 30, 16),
    ("path_fox", 2, 170, 4, 2, 32, 4, [0, 37], 30, 32),
    ("path", 1, 150, 2, 1, 16, 2, [21], 0, 32),
]


@pytest.mark.parametrize("case", COARSE, ids=lambda c: "{}-B{}T{}HQ{}H{}D{}S{}-pad{}-cache{}-BM{}".format(
    *c[:7], c[7] is not None, *c[8:]))
def test_coarse_walk_matches_definition(case):
    """The walk over whole super-chunks (keys at their super-chunk end, one dense step per
    super-chunk, gate sums per super-chunk) after the fine walk inside the row's own super-chunk:
    several super-chunks and a partial last one, GQA, left padding, a cache before the segment,
    one chunk or two a program."""
    variant, B, T, HQ, H, D, size, pad_left, L, BM = case
    x = random_inputs(variant, B, L + T, HQ, H, D, seed=T + size, pad_left=pad_left)
    ref = definition(x, slice(L, None))
    args = as_dtype(x, torch.float32)
    seg = segment(args, slice(L, None))
    if L:
        valid = None if x.key_valid is None else x.key_valid[:, :L]
        seg.update(cache_k=naive_transport(x.k[:, :L], x.w[:, :L], x.beta[:, :L], valid).float().to(DEVICE),
                   cache_v=args["v"][:, :L], cache_valid=None if valid is None else valid.to(DEVICE),
                   cache_g=None if x.g is None else gates_to_end(args["g"][:, :L] * valid[..., None].to(DEVICE)))
    out, _ = path_attention(**seg, chunk_size=16, block_m=BM, super_chunks=size)
    rows = [slice(None) if pad_left is None else slice(max(0, pad - L), None) for pad in (pad_left or [0] * B)]
    for b in range(B):
        assert relative_error(out[b, rows[b]].double().cpu(), ref[b, rows[b]]) <= 1e-5, b


@pytest.mark.parametrize("case", COARSE[1::2], ids=lambda c: "{}-D{}S{}-cache{}-BM{}".format(c[0], c[5], c[6], *c[8:]))
def test_coarse_walk_two_chunks_a_key_block(case, monkeypatch):
    """The coarse loop taking its keys two chunks a step (`COARSE_CHUNKS` = 2, a configuration the GPU
    tunes at D <= 64) against the definition: gates, padding, a cache, one chunk or two a program."""
    from path_eval.kernels.path_attn import fwd
    if fwd.TUNED:
        pytest.skip("the autotuner picks the configuration here; run with PATH_EVAL_AUTOTUNE=0")
    monkeypatch.setattr(fwd, "UNTUNED", {**fwd.UNTUNED, "COARSE_CHUNKS": 2})
    test_coarse_walk_matches_definition(case)


@pytest.mark.parametrize("rows", [None, 16], ids=["default rows", "16 rows a program"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(2, 144, 2, 32, 16, 2), (1, 208, 1, 128, 16, 4)],
                         ids=lambda s: "B{}T{}H{}D{}C{}S{}".format(*s))
def test_super_chunk_transport_kernel_matches_torch_reference(shape, dtype, rows, monkeypatch):
    """The coarse walk's super-chunk keys and U_super from the WY form (`coarse.py`, D split in row
    blocks of `coarse._transport_rows`, or of 16 rows as the launch bench times them) against the
    dense suffix products of `chunks.naive_super_chunk_transport` in float64; 16-bit outputs are rounded
    once, so their error is about one rounding."""
    from path_eval.kernels.path_attn import coarse
    if rows is not None:
        monkeypatch.setattr(coarse, "_transport_rows", lambda head_dim: rows)
    B, T, H, D, C, size = shape
    count = (T // C - 1) // size
    x = random_inputs("path", B, T, H, H, D, seed=T + D)
    transport = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64).transport()
    ref_keys, ref_U = naive_super_chunk_transport(transport, size, count)
    args = as_dtype(x, dtype)
    prep = prepare_path(args["q"], args["k"], args["w"], args["beta"], C, False, coarse=True)
    keys, U = super_chunk_transport_triton(prep.k32, args["w"], prep.tw, size, count, dtype)
    bound = 1e-5 if dtype == torch.float32 else 1e-3
    assert keys.dtype == U.dtype == dtype
    assert relative_error(keys.double().cpu(), ref_keys) <= bound
    assert relative_error(U.double().cpu(), ref_U) <= bound


def test_coarse_walk_returns_the_per_chunk_transport():
    """With a coarse walk the forward still hands back the per-chunk `Transport` that moves a cache:
    the one of the walk over every chunk, within 1e-5 of float64, beside equal outputs."""
    x = random_inputs("path", 1, 160, 2, 1, 32, seed=3)
    args = as_dtype(x, torch.float32)
    out_fine, fine = path_attention(**args, chunk_size=16, block_m=16, super_chunks=1, transport=True)
    out_coarse, coarse = path_attention(**args, chunk_size=16, block_m=16, super_chunks=4, transport=True)
    assert torch.equal(coarse.k_end, fine.k_end) and torch.equal(coarse.U, fine.U)
    ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, 16, torch.float64).transport()
    assert relative_error(coarse.k_end.double().cpu(), ref.k_end) <= 1e-5 and relative_error(coarse.U.double().cpu(), ref.U) <= 1e-5
    assert relative_error(out_coarse.double().cpu(), out_fine.double().cpu()) <= 1e-5


def test_coarse_walk_half_precision_within_rounding():
    """fp16 super-chunk keys and U_super, rounded once from float32, at D = 64 (PaTH-FoX: gates too)."""
    variant = "path_fox"
    x = random_inputs(variant, 1, 200, 4, 2, 64, seed=5)
    out, _ = path_attention(**as_dtype(x, torch.float16), chunk_size=16, block_m=16, super_chunks=4)
    rounded = copy.copy(x)
    rounded.q, rounded.k, rounded.v = (t.to(torch.float16).double() for t in (x.q, x.k, x.v))
    err = relative_error(out.double().cpu(), definition(rounded))
    assert err <= 3e-3, err


@pytest.mark.parametrize("block_m", [32, 64], ids=["one chunk a program", "two chunks a program"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_left_padding(variant, block_m):
    """Rows padded on the left give the outputs of the unpadded rows (padding: no key, no transform, no decay)."""
    x = random_inputs(variant, 3, 90, 4, 2, 32, seed=8, pad_left=[0, 17, 64])
    out, _ = path_attention(**as_dtype(x, torch.float32), chunk_size=32, block_m=block_m)
    ref = definition(x)
    for b, pad in enumerate([0, 17, 64]):
        assert relative_error(out[b, pad:].double().cpu(), ref[b, pad:]) <= 1e-5
        assert torch.equal(out[b, :pad], torch.zeros_like(out[b, :pad]))  # padded rows see no key


def test_rows_without_an_unmasked_key_give_zero():
    """A row with every key masked (padding at the start of a sequence over a masked cache) attends
    to nothing: exactly 0, never inf or NaN, which a later layer would spread through the padded
    positions' keys and values. Masked logits must weigh exactly 0 for that: with a finite mask
    value the fused multiply-add of the compiled softmax leaves a residual that exp2 overflows on.
    The other rows are the same with the cache in one part or in three merged by log-sum-exp."""
    x = random_inputs("path_fox", 2, 8, 4, 2, 16, seed=3, pad_left=[0, 5])
    args = as_dtype(x, torch.float32)
    g = torch.Generator().manual_seed(4)
    L = 40
    cache = dict(cache_k=torch.randn(2, L, 2, 16, generator=g).to(DEVICE), cache_v=torch.randn(2, L, 2, 16, generator=g).to(DEVICE),
                 cache_g=-torch.rand(2, L, 4, generator=g).to(DEVICE),
                 cache_valid=torch.tensor([[True] * L, [False] * L]).to(DEVICE))
    one, three = (path_attention(**args, **cache, splits=splits, cache_block=16)[0] for splits in (1, 3))
    for out in (one, three):
        assert torch.equal(out[1, :5], torch.zeros_like(out[1, :5]))
        assert torch.isfinite(out).all()
    assert relative_error(three.double().cpu(), one.double().cpu()) <= 1e-6


def segment(x, sl):
    pick = lambda t: None if t is None else t[:, sl]  # noqa: E731
    return dict(q=x["q"][:, sl], k=x["k"][:, sl], v=x["v"][:, sl], scale=x["scale"], w=pick(x["w"]),
                beta=pick(x["beta"]), g=pick(x["g"]), gate_scale=x["gate_scale"], key_valid=pick(x["key_valid"]))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("cuts,fold_every", [([37, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 95], 4),
                                             ([1, 2, 3, 64, 65, 66], 64), ([50, 51, 52, 53, 54, 55], 3)],
                         ids=["prefill-decode-folds", "decode-prefill-decode", "fold-every-3"])
def test_cache_segments_equal_one_pass(variant, cuts, fold_every):
    """Chunked prefill and token-by-token decode on a PathKVCache give the rows of one full pass,
    through pending tails and folds."""
    T = cuts[-1]
    x = random_inputs(variant, 2, T, 4, 2, 16, seed=len(cuts), pad_left=[0, 5])
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=fold_every)
    start = 0
    for stop in cuts:
        out = cache.attend(**segment(args, slice(start, stop)))
        assert cache.length == stop
        assert relative_error(out[:1].double().cpu(), ref[:1, start:stop]) <= 1e-5, (start, stop)
        real = max(start, 5)  # row 1 is padded up to 5: its padding rows have no defined output
        if stop > real:
            assert relative_error(out[1:, real - start:].double().cpu(), ref[1:, real:stop]) <= 1e-5, (start, stop)
        start = stop


def test_folded_keys_equal_the_definition():
    x = random_inputs("path", 2, 70, 2, 2, 16, seed=4)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=8)
    for start, stop in [(0, 30), (30, 45), (45, 61), (61, 70)]:
        cache.attend(**segment(args, slice(start, stop)))
    assert cache.folded == 70
    ref = naive_transport(x.k, x.w, x.beta)
    assert relative_error(cache.k[:, :70].double().cpu(), ref) <= 1e-5


@pytest.mark.parametrize("dtype", [torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else []))
@pytest.mark.parametrize("D", [32, 128])
def test_half_precision_cache_through_folds(dtype, D):
    """A 16-bit cache (the folds' in-place kernel) through chunked prefill, decoding and folds: the
    outputs and the folded keys stay within 16-bit rounding of the definition on the rounded inputs."""
    x = random_inputs("path", 2, 120, 4, 2, D, seed=9)
    args = as_dtype(x, dtype)
    rounded = copy.copy(x)
    rounded.q, rounded.k, rounded.v = (t.to(dtype).double() for t in (x.q, x.k, x.v))
    ref = definition(rounded)
    tol = 1.5e-2 if dtype == torch.bfloat16 else 3e-3
    cache = PathKVCache(fold_every=8)
    start, errors = 0, {}
    for stop in (50, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 120):
        out = cache.attend(**segment(args, slice(start, stop)))
        errors[start, stop] = relative_error(out.double().cpu(), ref[:, start:stop])
        start = stop
    assert cache.folded == 120
    errors["keys"] = relative_error(cache.k[:, :120].double().cpu(), naive_transport(rounded.k, x.w, x.beta))
    print(dtype, "16-bit cache errors", {k: f"{v:.1e}" for k, v in errors.items()})
    assert max(errors.values()) <= tol, errors


@pytest.mark.parametrize("T,C", [(16, 16), (40, 16), (300, 16), (130, 64), (520, 16), (1000, 16)])
def test_segment_transport_equals_one_householder_at_a_time(T, C):
    """`transport_state` (chunk transitions, suffix products by a two-level scan: 1 to 63 chunks,
    groups padded or not) against the definition's token-by-token Householders, for cache and
    segment keys, float64."""
    x = random_inputs("path", 2, T, 2, 2, 16, seed=T)
    cache_k = torch.randn(2, 9, 2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ch = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
    got = transport_state(ch.transport(), cache_k, T).movedim(1, 2)
    assert relative_error(got, naive_transport(x.k, x.w, x.beta, cache_k=cache_k)) <= 1e-12


@pytest.mark.parametrize("dtype", [torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else []))
@pytest.mark.parametrize("B,L,H,D", [(1, 70, 1, 16), (2, 1100, 3, 32), (1, 2100, 2, 64), (2, 130, 1, 128)])
def test_move_keys_kernel_rounds_the_exact_product_once(B, L, H, D, dtype):
    """The in-place fold (three 16-bit passes over M's parts) against the float64 product rounded
    once to the key dtype: never further from the exact value than that rounding (beyond float32
    slack), and equal but for values near a 16-bit tie (a float32-rounded M gives 0.03-0.15% such
    values in a torch emulation, the kernel's three parts 0.09-0.15%, a single 16-bit pass over M
    30-37% and breaks the bound). M is a product of Householders with beta up to 2, passed
    transposed as the segment fold does; L crosses program boundaries (1024 rows) and blocks."""
    g = torch.Generator().manual_seed(L + D)
    k = torch.randn(B, L, H, D, generator=g, dtype=torch.float64)
    w = torch.nn.functional.normalize(torch.randn(B, H, 8, D, generator=g, dtype=torch.float64), dim=-1)
    beta = 2 * torch.rand(B, H, 8, generator=g, dtype=torch.float64)
    beta[..., ::2] = 2 - 1e-4 * beta[..., ::2]  # half of them near 2
    M = torch.eye(D, dtype=torch.float64).repeat(B, H, 1, 1)
    for i in range(8):
        M = M - beta[:, :, i, None, None] * (M @ w[:, :, i, :, None]) @ w[:, :, i, None, :]
    cache = k.to(dtype).to(DEVICE)
    exact = cache.double().cpu()
    naive_move_keys(exact, M.transpose(-1, -2))
    move_keys(cache, M.float().to(DEVICE).transpose(-1, -2))
    got, want = cache.double().cpu(), exact.to(dtype).double()
    assert (got != want).float().mean() <= 5e-3
    assert ((got - exact).abs() <= (want - exact).abs() + 2e-6 * exact.abs().clamp(min=1)).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_cache_splits_equal_one_program(variant):
    """Flash-decoding splits of the cache, merged by log-sum-exp, change nothing."""
    x = random_inputs(variant, 2, 300, 4, 2, 16, seed=6)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache()
    cache.attend(**segment(args, slice(0, 290)))
    outs = [cache.attend(**segment(args, slice(290, 300)), splits=s, append=False) for s in (1, 3, 7)]
    ref = definition(x, slice(290, 300))
    for out in outs:
        assert relative_error(out.double().cpu(), ref) <= 1e-5


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoding_splits_equal_the_definition(variant):
    """The decoding kernel's cache splits (each a partial softmax, merged by log-sum-exp in the
    commit kernel) over a padded cache, through a fold, token by token."""
    x = random_inputs(variant, 2, 330, 4, 2, 16, seed=8, pad_left=[0, 70])
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=8)
    cache.attend(**segment(args, slice(0, 320)))
    for t, splits in zip(range(320, 330), (1, 3, 7, 2, 5, 3, 4, 6, 1, 3)):
        out = cache.attend(**segment(args, slice(t, t + 1)), splits=splits)
        assert relative_error(out.double().cpu(), ref[:, t:t + 1]) <= 1e-5, (t, splits)
    assert cache.folded == 328 and cache.pending_len == 2


@pytest.mark.parametrize("variant", ["fox", "path_fox"])
def test_strong_gates_over_long_inputs_keep_float32_precision(variant):
    """Log gates near -4 per token sum to about -6000 over 1500 tokens. A global cumulative sum
    would lose ~2e-4 of every nearby logit (float32 spacing at 6000: 1.7e-5 of the output here);
    in-chunk sums with running offsets keep the kernel, chunked prefill and decoding within 3e-6
    of the definition."""
    x = random_inputs(variant, 1, 1500, 2, 1, 16, seed=21)
    x.g = -4.0 + 0.5 * torch.randn(x.g.shape, generator=torch.Generator().manual_seed(22), dtype=x.g.dtype)
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    out, _ = path_attention(**args)
    assert relative_error(out.double().cpu(), ref) <= 3e-6
    cache = PathKVCache()
    prefill = cache.attend(**segment(args, slice(0, 1490)))
    assert relative_error(prefill.double().cpu(), ref[:, :1490]) <= 3e-6
    for t in range(1490, 1500):
        step = cache.attend(**segment(args, slice(t, t + 1)))
        assert relative_error(step.double().cpu(), ref[:, t:t + 1]) <= 3e-6, t


@pytest.mark.parametrize("block_m", [24, 128])
def test_rows_a_program_must_divide_the_chunk_or_be_two_chunks(block_m):
    x = as_dtype(random_inputs("path", 1, 70, 2, 2, 16, seed=1), torch.float32)
    with pytest.raises(ValueError, match=f"block_m {block_m} must divide the chunk size 32 or be twice it"):
        path_attention(**x, chunk_size=32, block_m=block_m)


@pytest.mark.parametrize("scale", [0.0, -0.125])
def test_scale_must_be_positive(scale):
    x = as_dtype(random_inputs("path", 1, 70, 2, 2, 16, seed=1), torch.float32)
    x["scale"] = scale
    with pytest.raises(ValueError, match=f"the Triton kernels take a positive scale, not {scale}"):
        path_attention(**x)


def test_pending_tail_must_fit_one_chunk():
    with pytest.raises(ValueError, match="fold_every 65"):
        PathKVCache(fold_every=65)


@pytest.mark.parametrize("variant", ["path_fox"])
def test_padding_mask_arriving_mid_tail(variant):
    """Decoding steps without a mask, then steps with one (all valid), then a multi-token segment:
    the tail's earlier tokens stay valid and the outputs stay those of one pass."""
    x = random_inputs(variant, 2, 80, 4, 2, 16, seed=9)
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=8)
    cache.attend(**segment(args, slice(0, 60)))
    for t in range(60, 75):
        step = segment(args, slice(t, t + 1))
        if t >= 63:
            step["key_valid"] = torch.ones(2, 1, dtype=torch.bool, device=DEVICE)
        assert relative_error(cache.attend(**step).double().cpu(), ref[:, t:t + 1]) <= 1e-5, t
    tail = segment(args, slice(75, 80))
    tail["key_valid"] = torch.ones(2, 5, dtype=torch.bool, device=DEVICE)
    assert relative_error(cache.attend(**tail).double().cpu(), ref[:, 75:80]) <= 1e-5



def test_recorded_steps_leave_the_host_count_to_advance():
    """Inside `capturing()` a decoding step changes device memory only (what a CUDA graph records):
    the host's lengths stay put until `advance()`, so steps made while the host count is stale
    (as replays are) must take the lengths from the device; `reserve` grows the buffers once, to
    just the room asked for, and no step replaces one. Stepping so, through folds, gives the
    definition's rows."""
    x = random_inputs("path_fox", 1, 260, 2, 1, 16, seed=12)
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=8)
    cache.attend(**segment(args, slice(0, 235)))  # capacity 256: the steps below would outgrow it
    cache.attend(**segment(args, slice(235, 236)))  # the first step allocates the tail's buffers
    cache.reserve(24)
    assert cache.k.shape[1] == 236 + 24 + cache.window
    buffers = [cache.k, cache.v, cache.g_end, cache.valid, cache.tail_k, cache.P, cache.lengths]
    t, stretches = 236, itertools.cycle((3, 1, 2))
    while t < 260:  # a stale stretch ends at a fold (which `advance` makes) or at the end
        steps = min(next(stretches), cache.fold_every - cache.pending_len, 260 - t)
        before = (cache.folded, cache.pending_len)
        with cache.capturing():
            for _ in range(steps):
                out = cache.attend(**segment(args, slice(t, t + 1)))
                assert relative_error(out.double().cpu(), ref[:, t:t + 1]) <= 1e-5, t
                t += 1
        assert (cache.folded, cache.pending_len) == before
        for _ in range(steps):
            cache.advance()
        assert cache.lengths.tolist() == [cache.folded, cache.pending_len]
    assert cache.folded == 259 and cache.pending_len == 1  # 235 prefilled, then folds of 8 at 243, 251, 259
    assert all(a is b for a, b in zip(buffers, [cache.k, cache.v, cache.g_end, cache.valid, cache.tail_k, cache.P,
                                                 cache.lengths]))


def test_reserved_steps_split_the_cache_as_for_its_planned_length(monkeypatch):
    """After `reserve`, every decoding step takes its default cache splits from the planned length
    (so eager steps and a replayed graph, whose count is fixed at capture, split alike), the splits
    past the current length are empty, and the rows are the definition's. The SM count is that of
    a large GPU, so that the default asks for more than one split here."""
    from path_eval.kernels.path_attn import decode
    monkeypatch.setattr(decode, "_sm_count", lambda device: 132)
    spans = []
    default = decode.default_splits
    monkeypatch.setattr(decode, "default_splits", lambda cached, rows, device: spans.append(cached) or default(cached, rows, device))
    x = random_inputs("path", 1, 122, 4, 2, 16, seed=14)
    ref = definition(x)
    args = as_dtype(x, torch.float32)
    cache = PathKVCache(fold_every=8)
    cache.attend(**segment(args, slice(0, 110)))
    cache.reserve(700)  # planned 810 tokens: 4 splits, of which the cache fills only the first two
    assert default(810, 4, None) == 4
    for t in range(110, 122):  # through a fold at 118
        out = cache.attend(**segment(args, slice(t, t + 1)))
        assert relative_error(out.double().cpu(), ref[:, t:t + 1]) <= 1e-5, t
    assert spans == [810] * 12
