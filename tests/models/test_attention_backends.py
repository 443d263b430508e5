"""The chunked `torch` backend against the materialised definition (`reference`), float64."""
import pytest
import torch

from path_eval.models.attention import AttentionInputs, reference, torch_backend
from path_eval.numerics import relative_error

VARIANTS = ["plain", "fox", "path", "path_fox"]


def random_inputs(variant, B, T, HQ, H, D, seed, dtype=torch.float64, pad_left=None):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    q, k, v = r(B, T, HQ, D) * 1.5, r(B, T, H, D) * 1.5, r(B, T, H, D)
    w = beta = gates = None
    if variant in ("path", "path_fox"):
        w = torch.nn.functional.normalize(r(B, T, H, D), dim=-1)
        beta = torch.rand(B, T, H, generator=g, dtype=dtype) * 2
        beta[:, ::3] = 2 - 1e-4 * torch.rand(B, T, H, generator=g, dtype=dtype)[:, ::3]  # near 2
        beta[:, 1::7] = 1.0  # H singular
    if variant in ("fox", "path_fox"):
        gates = torch.nn.functional.logsigmoid(r(B, T, HQ) * 2 + 2)
    valid = None
    if pad_left is not None:
        valid = torch.arange(T)[None] >= torch.tensor(pad_left)[:, None]
    scale = D ** -0.5
    return AttentionInputs(q, k, v, scale, w, beta, gates, scale if variant == "path_fox" else 1.0, valid)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("T,chunk", [(1, 64), (37, 8), (64, 16), (100, 32), (130, 64)])
@pytest.mark.parametrize("HQ,H", [(2, 2), (4, 2), (6, 1)])
def test_torch_equals_reference(variant, T, chunk, HQ, H):
    x = random_inputs(variant, 2, T, HQ, H, 16, seed=T * 7 + HQ)
    ref, ref_state = reference.attend(x, None, True)
    out, state = torch_backend.attend(x, None, True, chunk_size=chunk)
    assert relative_error(out, ref) <= 1e-10
    assert relative_error(state.k, ref_state.k) <= 1e-10
    if x.g is not None and T == 1:  # the one key has no gate after it: its decay to the end is exactly 0
        assert not ref_state.g_to_end.any() and not state.g_to_end.any()
    elif x.g is not None:
        assert relative_error(state.g_to_end, ref_state.g_to_end) <= 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("split", [1, 5, 33])
def test_segment_after_cache_equals_one_pass(variant, split):
    """Attending to a transported cache gives exactly the rows of one long pass."""
    T = 70
    x = random_inputs(variant, 2, T, 4, 2, 16, seed=split)
    full, _ = reference.attend(x, None, False)

    def part(sl):
        pick = lambda t: None if t is None else t[:, sl]  # noqa: E731
        return AttentionInputs(x.q[:, sl], x.k[:, sl], x.v[:, sl], x.scale, pick(x.w), pick(x.beta), pick(x.g),
                               x.gate_scale, None)

    for backend in (reference.attend, lambda a, p, b: torch_backend.attend(a, p, b, chunk_size=16)):
        _, state = backend(part(slice(0, split)), None, True)
        tail, _ = backend(part(slice(split, T)), state, False)
        assert relative_error(tail, full[:, split:]) <= 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_left_padding_is_invisible(variant):
    """A left-padded row gives the outputs of the unpadded row."""
    T, pads = 40, [0, 9]
    x = random_inputs(variant, 2, T, 4, 2, 16, seed=3, pad_left=pads)
    for backend in (reference.attend, lambda a, p, b: torch_backend.attend(a, p, b, chunk_size=8)):
        out, _ = backend(x, None, False)
        row = slice(pads[1], T)
        pick = lambda t: None if t is None else t[1:2, row]  # noqa: E731
        alone = AttentionInputs(x.q[1:2, row], x.k[1:2, row], x.v[1:2, row], x.scale, pick(x.w), pick(x.beta),
                                pick(x.g), x.gate_scale, None)
        ref, _ = reference.attend(alone, None, False)
        assert relative_error(out[1:2, row], ref) <= 1e-10


def test_float32_torch_within_1e5_of_reference():
    for variant in ("path", "path_fox"):
        x64 = random_inputs(variant, 1, 300, 4, 2, 64, seed=11)
        to32 = lambda t: None if t is None else t.float()  # noqa: E731
        x32 = AttentionInputs(*(to32(getattr(x64, n)) for n in ("q", "k", "v")), x64.scale, to32(x64.w),
                              to32(x64.beta), to32(x64.g), x64.gate_scale, None)
        ref, _ = reference.attend(x64, None, False)
        out, _ = torch_backend.attend(x32, None, False)
        assert relative_error(out.double(), ref) <= 1e-5


@pytest.mark.parametrize("variant", ["fox", "path_fox"])
def test_float32_torch_keeps_strong_gates_precise(variant):
    """Log gates near -4 per token over 1500 tokens (a global float32 cumulative sum would lose ~2e-4
    of each nearby logit): the float32 torch backend, in one pass and continuing a cache, stays
    within 3e-6 of the float64 reference."""
    x64 = random_inputs(variant, 1, 1500, 2, 1, 16, seed=21)
    x64.g = -4.0 + 0.5 * torch.randn(x64.g.shape, generator=torch.Generator().manual_seed(22), dtype=x64.g.dtype)
    ref, _ = reference.attend(x64, None, False)
    f32 = lambda t, sl=slice(None): None if t is None else t[:, sl].float()  # noqa: E731

    def part(sl):
        return AttentionInputs(f32(x64.q, sl), f32(x64.k, sl), f32(x64.v, sl), x64.scale, f32(x64.w, sl),
                               f32(x64.beta, sl), f32(x64.g, sl), x64.gate_scale, None)

    out, _ = torch_backend.attend(part(slice(None)), None, False)
    assert relative_error(out.double(), ref) <= 3e-6
    _, state = torch_backend.attend(part(slice(0, 1490)), None, True)
    tail, _ = torch_backend.attend(part(slice(1490, 1500)), state, False)
    assert relative_error(tail.double(), ref[:, 1490:]) <= 3e-6
