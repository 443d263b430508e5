"""The fused Householder-direction kernel (`short_conv/fused.py`) against its torch definition
(`short_conv/naive.py`): float32 inputs against the definition in float64, 16-bit
inputs against the torch path in the same dtype (which rounds the convolution and silu alike).
Under TRITON_INTERPRET=1 on the CPU (tests/conftest.py), compiled on a GPU."""
import pytest
import torch

from path_eval.kernels.short_conv.fused import householder_directions_triton
from path_eval.kernels.short_conv.naive import conv_history, householder_directions

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HALF = [torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])

SHAPES = [  # B, T, heads, D, K, history, bias
    (1, 1, 2, 16, 4, True, False),    # one decoding step: every tap but the last from the history
    (2, 2, 1, 32, 4, True, True),     # fewer rows than taps
    (1, 70, 3, 16, 4, False, True),   # rows across two programs, zero history
    (2, 130, 2, 64, 3, True, False),  # another tap count
    (1, 65, 1, 128, 4, True, True),
]


def random_case(B, T, heads, D, K, history, bias, seed):
    g = torch.Generator().manual_seed(seed)
    C = heads * D
    raw = torch.randn(B, T, C, generator=g, dtype=torch.float64)
    hist = torch.randn(B, K - 1, C, generator=g, dtype=torch.float64) if history else None
    weight = torch.randn(C, 1, K, generator=g, dtype=torch.float64) * 0.7
    b = torch.randn(C, generator=g, dtype=torch.float64) * 0.3 if bias else None
    return raw, hist, weight, b


def cast(t, dtype):
    return None if t is None else t.to(dtype).to(DEVICE)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}T{}H{}D{}K{}hist{}bias{}".format(*s))
def test_directions_kernel_matches_the_float64_definition(shape):
    """float32 inputs: the kernel within float32 rounding of the definition evaluated in float64 on
    the same values, unit norm per head."""
    raw, hist, weight, bias = random_case(*shape, seed=sum(shape[:4]))
    args32 = [cast(t, torch.float32) for t in (raw, hist, weight, bias)]
    got = householder_directions_triton(*args32, heads=shape[2]).double().cpu()
    want = householder_directions(*[None if t is None else t.double().cpu() for t in args32], heads=shape[2])
    assert got.shape == want.shape == (shape[0], shape[1], shape[2], shape[3])
    assert (got - want).abs().max().item() <= 2e-6
    assert torch.allclose(got.norm(dim=-1), torch.ones(()).double(), atol=1e-5)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}T{}H{}D{}K{}hist{}bias{}".format(*s))
def test_directions_kernel_rounds_like_the_torch_path(shape, dtype):
    """16-bit inputs: the kernel against the torch path in the same dtype (convolution and silu rounded
    to it, as the model computed w before the kernel): their convolutions differ only in accumulation
    order, which can move a value across a 16-bit rounding boundary, one unit in the last place of the
    convolution or silu, so w moves by about that unit; and both roundings of the float64 definition
    keep w within a few units."""
    raw, hist, weight, bias = random_case(*shape, seed=sum(shape[:4]) + 1)
    args = [cast(raw, dtype), cast(hist, dtype), cast(weight, dtype), cast(bias, dtype)]
    got = householder_directions_triton(*args, heads=shape[2]).double().cpu()
    torch_path = householder_directions(*args, heads=shape[2]).double().cpu()
    exact = householder_directions(*[None if t is None else t.double().cpu() for t in args], heads=shape[2])
    ulp = torch.finfo(dtype).eps
    print(f"{dtype} max |kernel - torch path| {(got - torch_path).abs().max().item():.2e}, "
          f"|kernel - float64| {(got - exact).abs().max().item():.2e}, ulp {ulp:.1e}")
    assert (got - torch_path).abs().max().item() <= 2 * ulp
    assert (got - exact).abs().max().item() <= 4 * ulp


def test_conv_history_is_the_last_rows_of_history_and_segment():
    """The next segment's history: the last K - 1 rows of history + raw, zeros standing for no history."""
    g = torch.Generator().manual_seed(3)
    hist, raw = torch.randn(2, 3, 5, generator=g), torch.randn(2, 2, 5, generator=g)
    assert torch.equal(conv_history(hist, raw, 3), torch.cat([hist, raw], 1)[:, -3:])
    assert torch.equal(conv_history(None, raw, 3), torch.cat([torch.zeros(2, 3, 5), raw], 1)[:, -3:])
    long = torch.randn(2, 7, 5, generator=g)
    assert torch.equal(conv_history(hist, long, 3), long[:, -3:])
