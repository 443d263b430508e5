"""The transition-kernel bench edits the committed prep.py: every edit must still find its text there
(once), each variant must import as a module of its own with the edit applied, and each candidate
rewrite must compute what the shipped kernel computes (on the GPU compiled, here under the
interpreter), so that a faster one can replace its part of prep.py."""
from pathlib import Path

import pytest
import torch

from benchmarks.transition_ablation import EDITS, Span, edit_text, variant_module
from path_eval.kernels.path_attn import prep
from path_eval.kernels.path_attn.chunks import prepare
from path_eval.numerics import relative_error
from tests.kernels.test_path_attn import as_dtype, correlated_w_inputs
from tests.models.test_attention_backends import random_inputs

EDITED = [(name, pairs) for name, kind, _, pairs in EDITS if kind != "whole"]
CANDIDATES = [(name, pairs) for name, kind, _, pairs in EDITS if kind == "candidate"]
UNSTABLE = [(name, pairs) for name, kind, _, pairs in EDITS if kind == "unstable"]


@pytest.mark.parametrize("name, pairs", EDITED, ids=[e[0] for e in EDITED])
def test_each_variant_is_prep_py_with_its_edit(name, pairs, tmp_path):
    module = variant_module(name, pairs, tmp_path)
    source = Path(module.__file__).read_text()
    shipped = Path(prep.__file__).read_text()
    for o, n in pairs:
        text = edit_text(o, shipped, name)
        assert n in source and source.count(text) == n.count(text)  # an insertion keeps its anchor text
    assert source != shipped
    assert callable(module.chunk_transitions)


def test_an_edit_whose_text_is_gone_stops_the_bench(tmp_path):
    with pytest.raises(SystemExit, match="no longer in prep.py"):
        variant_module("gone", (("text that prep.py does not hold\n", ""),), tmp_path)
    with pytest.raises(SystemExit, match="passage is no longer in prep.py"):
        variant_module("gone", ((Span("    X = tl.load(x_tile + ci[:, None] * C + ci[None, :])\n",
                                      "a last line that prep.py does not hold\n"), ""),), tmp_path)


def test_a_span_replaces_the_passage_from_its_first_line_through_its_last():
    source = "a\nb\nc\nd\n"
    assert edit_text(Span("b\n", "c\n"), source, "x") == "b\nc\n"
    with pytest.raises(SystemExit):
        edit_text(Span("b\n", "a\n"), source, "x")  # its last line only before its first


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(1, 128, 2, 32, 64), (1, 192, 1, 64, 64), (1, 64, 2, 128, 64), (2, 64, 2, 32, 32)],
                         ids=lambda s: "B{}T{}H{}D{}C{}".format(*s))
@pytest.mark.parametrize("name, pairs", CANDIDATES + UNSTABLE, ids=[c[0] for c in CANDIDATES + UNSTABLE])
def test_each_candidate_computes_what_the_shipped_kernel_does(name, pairs, shape, dtype, tmp_path):
    """float32 inputs: against the shipped kernel within 1e-6 (the same float32-accurate arithmetic,
    in another order at most) and against `chunks.prepare` in float64 within 1e-5. 16-bit inputs, whose
    products after the solve take one tf32 pass over factors rounded to tf32, where a last-bit change
    in T flips roundings: no further from `chunks.prepare` in float64 on the same rounded inputs than
    the shipped kernel, within 1% of its error (beta near 2 included)."""
    B, T, H, D, C = shape
    x = random_inputs("path", B, T, H, H, D, seed=T + D)
    args = as_dtype(x, dtype)
    candidate = variant_module(name, pairs, tmp_path)
    got = candidate.chunk_transitions(args["k"], args["w"], args["beta"], 1, C, True, True)
    shipped = prep.chunk_transitions(args["k"], args["w"], args["beta"], 1, C, True, True)
    ref = prepare(*(args[n].cpu().double() for n in "qk"), None, args["w"].cpu().double(), args["beta"].cpu().double(),
                  None, None, C, torch.float64)
    state = ref.transport()
    fields = dict(tw=ref.TW, k32=state.k_end, U32=state.U)
    if dtype == torch.float32:
        for field in ("tw", "cm", "k_end", "U", "k32", "U32"):
            a, b = getattr(got, field).double().cpu(), getattr(shipped, field).double().cpu()
            assert relative_error(a, b) <= 1e-6, field
        for field, want in fields.items():
            assert relative_error(getattr(got, field).double().cpu(), want) <= 1e-5, field
    else:
        fields.update(k_end=state.k_end, U=state.U)  # the 16-bit outputs too, rounded once
        for field, want in fields.items():
            err, shipped_err = (relative_error(getattr(t, field).double().cpu(), want) for t in (got, shipped))
            assert err <= 1.01 * shipped_err, (field, err, shipped_err)

        def logits_error(t):
            """Cm through the shipped query kernel, which writes the in-chunk logits it makes from t.cm into t.intra."""
            prep.chunk_queries(args["q"], args["k"], args["w"], t)
            return relative_error(t.intra.double().cpu(), ref.intra)
        err, shipped_err = logits_error(got), logits_error(shipped)
        assert err <= 1.01 * shipped_err, ("intra", err, shipped_err)


@pytest.mark.parametrize("name, pairs, stable", [(n, p, True) for n, p in CANDIDATES] + [(n, p, False) for n, p in UNSTABLE],
                         ids=[c[0] for c in CANDIDATES + UNSTABLE])
def test_candidates_are_stable_on_correlated_w_rows_and_the_unstable_ones_are_not(name, pairs, stable, tmp_path):
    """Nearly parallel w rows with beta near 2 (tests/kernels/test_path_attn.py's
    `test_preparation_kernel_with_correlated_w_rows`, its inputs and its 1e-4 bound against float64):
    an ill-conditioned I + A, where a rewrite of the solve that is exact on well-conditioned inputs
    can lose all accuracy. A candidate keeps the bound; a rewrite the bench calls unstable misses it."""
    C = 64
    x = correlated_w_inputs(HQ=2, H=2)
    ref = prepare(x.q, x.k, None, x.w, x.beta, None, None, C, torch.float64)
    state = ref.transport()
    args = as_dtype(x, torch.float32)
    got = variant_module(name, pairs, tmp_path).chunk_transitions(args["k"], args["w"], args["beta"], 1, C, True, True)
    errors = dict(tw=relative_error(got.tw.double().cpu(), ref.TW), k32=relative_error(got.k32.double().cpu(), state.k_end),
                  U32=relative_error(got.U32.double().cpu(), state.U))
    assert (max(errors.values()) <= 1e-4) is stable, errors


def test_apply_writes_a_candidate_into_prep_py_and_refuses_other_names(tmp_path, monkeypatch):
    from benchmarks import transition_ablation
    name, pairs = CANDIDATES[0]
    shipped = Path(prep.__file__).read_text()
    target = tmp_path / "prep.py"
    target.write_text(shipped)
    monkeypatch.setattr(prep, "__file__", str(target))
    expected = transition_ablation.variant_source(name, pairs)
    transition_ablation.main(["--apply", name])
    assert target.read_text() == expected != shipped
    with pytest.raises(SystemExit, match="no candidate named"):
        transition_ablation.main(["--apply", "no solve"])
