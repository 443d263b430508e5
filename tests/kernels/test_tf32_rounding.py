"""tf32 on both sides of the preparation's plain tf32 products: the kernel rounds its float32
factors to nearest (`prep._tf32`), the hardware (and the interpreter patch of tests/conftest.py,
`tests.tf32_emulation`) truncates what it is given. Both against float64 arithmetic."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from path_eval.kernels.path_attn.prep import _tf32
from tests.tf32_emulation import truncate_to_tf32

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def sample() -> np.ndarray:
    """float32 values over 60 decades, both signs, with exact ties (low 13 bits 0x1000) and the
    largest mantissas (rounding up into the next binade) among them."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(4096) * 10.0 ** rng.integers(-30, 30, 4096)).astype(np.float32)
    bits = x.view(np.uint32)
    bits[:512] = (bits[:512] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)
    bits[512:768] |= np.uint32(0x007FF000)
    return x


def tf32_step(x: np.ndarray) -> np.ndarray:
    return 2.0 ** (np.floor(np.log2(np.abs(x.astype(np.float64)))) - 10)


def test_emulation_truncates_to_tf32():
    x = sample()
    t = truncate_to_tf32(x.copy()).astype(np.float64)
    x64 = x.astype(np.float64)
    assert (np.sign(t) == np.sign(x64)).all() and (np.abs(t) <= np.abs(x64)).all()
    assert (np.abs(x64 - t) < tf32_step(x)).all()
    assert (np.abs(t / tf32_step(x)) % 1 == 0).all()  # a whole number of tf32 steps


@triton.jit
def _round_kernel(X, Y, CVT: tl.constexpr):
    i = tl.arange(0, 4096)
    x = tl.load(X + i)
    if CVT:  # the hardware's own rounding, for comparison on a GPU
        y = tl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        y = _tf32(x, True)
    tl.store(Y + i, y)


def run_rounding(x: np.ndarray, cvt: bool) -> np.ndarray:
    xt = torch.from_numpy(x).to(DEVICE)
    y = torch.empty_like(xt)
    _round_kernel[(1,)](xt, y, CVT=cvt)
    return y.cpu().numpy()


def with_specials(x: np.ndarray) -> np.ndarray:
    """x with its first values replaced by zeros, infinities, NaNs (the GPU's 0x7FFFFFFF among
    them) and the largest floats, which round up to infinity."""
    x = x.copy()
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000,
                        0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FE000], dtype=np.uint32)
    x.view(np.uint32)[:len(special)] = special
    return x


def test_preparation_rounds_tf32_factors_to_nearest_ties_away():
    x = sample()
    x64 = x.astype(np.float64)
    step = tf32_step(x)
    expected = np.sign(x64) * np.floor(np.abs(x64) / step + 0.5) * step
    got = run_rounding(x, cvt=False)
    np.testing.assert_array_equal(got.astype(np.float64), expected)
    got = run_rounding(with_specials(x), cvt=False)[:10]
    assert got[0] == 0 and got[1] == 0 and np.signbit(got[1])
    assert got[2] == np.inf and got[3] == -np.inf and np.isnan(got[4:7]).all()
    assert got[7] == np.inf and got[8] == -np.inf and got[9] == with_specials(x)[9]


@pytest.mark.skipif(DEVICE != "cuda", reason="cvt.rna needs an NVIDIA GPU")
def test_preparation_rounding_matches_the_hardware_cvt_rna():
    x = with_specials(sample())
    ours, cvt = run_rounding(x, cvt=False), run_rounding(x, cvt=True)
    nan = np.isnan(cvt)
    assert (np.isnan(ours) == nan).all()
    np.testing.assert_array_equal(ours[~nan], cvt[~nan])


@triton.jit
def _dot_kernel(A, B, C, PREC: tl.constexpr):
    i = tl.arange(0, 16)
    a = tl.load(A + i[:, None] * 16 + i[None, :])
    b = tl.load(B + i[:, None] * 16 + i[None, :])
    tl.store(C + i[:, None] * 16 + i[None, :], tl.dot(a, b, input_precision=PREC))


@pytest.mark.parametrize("prec,expected", [("tf32", 1.0), ("tf32x3", 1 + 2.0 ** -11 + 2.0 ** -12)])
def test_plain_tf32_products_truncate_their_float32_operands(prec, expected):
    """x = 1 + 2^-11 + 2^-12 times one: a plain tf32 product keeps x's top 10 mantissa bits and gives
    1 (rounding would give 1 + 2^-10), tf32x3 gives x. On the CPU this is the interpreter patch at
    work; on an NVIDIA GPU, the tensor cores."""
    a = torch.zeros(16, 16, device=DEVICE)
    a[0, 0] = 1 + 2.0 ** -11 + 2.0 ** -12
    c = torch.empty_like(a)
    _dot_kernel[(1,)](a, torch.eye(16, device=DEVICE), c, PREC=prec)
    assert c[0, 0].item() == expected
