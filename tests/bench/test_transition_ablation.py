"""The transition-kernel bench edits the committed prep.py: every edit must still find its text there
(once), each variant must import as a module of its own with the edit applied, and each candidate
rewrite must compute what the shipped kernel computes (on the GPU compiled, here under the
interpreter), so that a faster one can replace its part of prep.py."""
from pathlib import Path

import pytest
import torch

from path_eval.bench.transition_ablation import EDITS, variant_module
from path_eval.kernels.path_attn import prep
from path_eval.kernels.path_attn.chunks import prepare
from tests.kernels.test_path_attn import as_dtype
from tests.models.test_attention_backends import random_inputs, rel

EDITED = [(name, pairs) for name, kind, _, pairs in EDITS if kind != "whole"]
CANDIDATES = [(name, pairs) for name, kind, _, pairs in EDITS if kind == "candidate"]


@pytest.mark.parametrize("name, pairs", EDITED, ids=[e[0] for e in EDITED])
def test_each_variant_is_prep_py_with_its_edit(name, pairs, tmp_path):
    module = variant_module(name, pairs, tmp_path)
    source = Path(module.__file__).read_text()
    for o, n in pairs:
        assert n in source and o not in source
    assert source != Path(prep.__file__).read_text()
    assert callable(module.chunk_transitions)


def test_an_edit_whose_text_is_gone_stops_the_bench(tmp_path):
    with pytest.raises(SystemExit, match="no longer in prep.py"):
        variant_module("gone", (("text that prep.py does not hold\n", ""),), tmp_path)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(1, 128, 2, 32, 64), (1, 192, 1, 64, 64), (1, 64, 2, 128, 64), (2, 64, 2, 32, 32)],
                         ids=lambda s: "B{}T{}H{}D{}C{}".format(*s))
@pytest.mark.parametrize("name, pairs", CANDIDATES, ids=[c[0] for c in CANDIDATES])
def test_each_candidate_computes_what_the_shipped_kernel_does(name, pairs, shape, dtype, tmp_path):
    """Against the shipped kernel on the same inputs (within 1e-6: the same arithmetic, in another
    order at most) and against `chunks.prepare` in float64, beta near 2 included."""
    B, T, H, D, C = shape
    x = random_inputs("path", B, T, H, H, D, seed=T + D)
    args = as_dtype(x, dtype)
    candidate = variant_module(name, pairs, tmp_path)
    got = candidate.chunk_transitions(args["k"], args["w"], args["beta"], 1, C, True, True)
    shipped = prep.chunk_transitions(args["k"], args["w"], args["beta"], 1, C, True, True)
    for field in ("tw", "cm", "k_end", "U", "k32", "U32"):
        a, b = getattr(got, field).double().cpu(), getattr(shipped, field).double().cpu()
        assert rel(a, b) <= 1e-6, field
    if dtype == torch.float32:
        ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
        assert rel(got.U32.double().cpu(), ref.transport().U) <= 1e-5
        assert rel(got.tw.double().cpu(), ref.TW) <= 1e-5
