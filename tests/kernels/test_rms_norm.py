"""The fused RMSNorm (`kernels/rms_norm/fused.py`) against its torch definition (`naive.py`):
float32 inputs against the definition in float64, 16-bit inputs against the torch path in the same
dtype (one rounding of a float32 result each). Under TRITON_INTERPRET=1 on the CPU
(tests/conftest.py), compiled on a GPU."""
import pytest
import torch

from path_eval.kernels.rms_norm.fused import rms_norm_triton
from path_eval.kernels.rms_norm.naive import rms_norm

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HALF = [torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])

SHAPES = [  # x shape, weight size
    ((1, 1, 1536), 1536),        # a decoding step's hidden state, N not a power of two
    ((2, 70, 96), 96),           # rows across programs, masked columns
    ((3, 5, 4, 64), 64),         # per-head norm, one weight for every head
    ((2, 33, 6, 16), 96),        # per-head norm, a weight per channel of every head (FoX's)
    ((3, 7, 1536), 1536),        # the hidden state over several programs of two rows
    ((2, 5, 24, 128), 3072),     # head dim 128, a weight per channel of each of 24 heads
    ((1, 40, 4, 64), 64),        # 160 rows of 64: programs of 64 rows, the last one part full
]


def random_case(shape, size, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    weight = 1 + 0.5 * torch.randn(size, generator=g, dtype=torch.float64)
    return x, weight


@pytest.mark.parametrize("shape,size", SHAPES, ids=lambda v: str(v))
def test_rms_norm_kernel_matches_the_float64_definition(shape, size):
    x, weight = random_case(shape, size, seed=size)
    x32, w32 = x.float().to(DEVICE), weight.float().to(DEVICE)
    got = rms_norm_triton(x32, w32, 1e-5).double().cpu()
    want = rms_norm(x32.double().cpu(), w32.double().cpu(), 1e-5)
    assert got.shape == x.shape
    assert ((got - want).abs() / want.abs().clamp(min=1e-3)).max().item() <= 1e-5


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape,size", SHAPES, ids=lambda v: str(v))
def test_rms_norm_kernel_rounds_like_the_torch_path(shape, size, dtype):
    """Both round one float32 value to `dtype`; they differ only where the order of the sum of squares
    moves it across a rounding boundary, then by one unit in the last place."""
    x, weight = random_case(shape, size, seed=size + 1)
    xh, wh = x.to(dtype).to(DEVICE), weight.to(dtype).to(DEVICE)
    got = rms_norm_triton(xh, wh, 1e-5).double().cpu()
    torch_path = rms_norm(xh, wh, 1e-5).double().cpu()
    ulps = (got - torch_path).abs() / (torch.finfo(dtype).eps * torch_path.abs().clamp(min=torch.finfo(dtype).tiny))
    assert ulps.max().item() <= 1.0
    assert (got != torch_path).double().mean().item() <= 0.01


def test_a_weight_that_fits_neither_the_last_dim_nor_every_head_is_refused():
    x = torch.randn(2, 3, 4, 16, device=DEVICE)
    with pytest.raises(ValueError, match="a weight of 32 values fits neither the last dim"):
        rms_norm_triton(x, torch.ones(32, device=DEVICE), 1e-5)
