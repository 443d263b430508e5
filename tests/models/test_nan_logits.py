"""The all-NaN logits check (`models.nan_logits`): at once, and deferred to the end of greedy generation."""
from pathlib import Path

import pytest
import torch

from path_eval.errors import PathEvalError
from path_eval.models.generation import generate
from path_eval.models.nan_logits import deferred_nan_checks, refuse_nan_logits
from tests.helpers import tiny_model

NAMED = "model m gives NaN logits"


def _checked(nan_rows: slice | None = slice(None)):
    """A tiny model checked as a loaded one is, its output embedding's `nan_rows` NaN."""
    model = tiny_model("path", seed=3)
    if nan_rows is not None:
        with torch.no_grad():
            model.get_output_embeddings().weight[nan_rows] = float("nan")
    refuse_nan_logits(model, Path("m"))
    return model


IDS = torch.randint(3, 97, (2, 9), generator=torch.Generator().manual_seed(0))


def test_all_nan_logits_stop_a_forward_at_once():
    with pytest.raises(PathEvalError, match=NAMED):
        _checked()(IDS)


def test_some_nan_logits_pass():
    """A padded row may hold NaN that no score reads: only all of them NaN is refused."""
    logits = _checked(slice(0, 5))(IDS).logits
    assert torch.isnan(logits).any() and not torch.isnan(logits).all()


def test_deferred_checks_raise_when_the_block_ends():
    model = _checked()
    forwards = 0
    with pytest.raises(PathEvalError, match=NAMED):
        with deferred_nan_checks():
            model(IDS)
            forwards += 1
            model(IDS)
            forwards += 1
    assert forwards == 2
    with pytest.raises(PathEvalError, match=NAMED):  # after the block, at once again
        model(IDS)


def test_deferred_checks_of_finite_logits_raise_nothing():
    model = _checked(None)
    with deferred_nan_checks():
        logits = model(IDS).logits
    assert torch.isfinite(logits).all()


def test_an_error_inside_the_block_is_the_one_raised():
    model = _checked()
    with pytest.raises(ValueError, match="inside"):
        with deferred_nan_checks():
            model(IDS)
            raise ValueError("inside")
    with pytest.raises(PathEvalError, match=NAMED):
        model(IDS)


def test_greedy_generation_reads_the_checks_after_its_tokens():
    """Greedy, the checks wait for generation's own reads (here `should_stop`'s looks), then name the model."""
    looks = []
    with pytest.raises(PathEvalError, match=NAMED):
        generate(_checked(), IDS, max_new_tokens=20, eos_token_id=[], pad_token_id=0,
                 should_stop=lambda new: looks.append(new.shape[1]) or torch.zeros(new.shape[0], dtype=torch.bool))
    assert looks == [8, 16]


def test_sampled_generation_stops_at_the_prefill():
    """Sampling from NaN probabilities would fail before a deferred check could name the cause."""
    looks = []
    with pytest.raises(PathEvalError, match=NAMED):
        generate(_checked(), IDS, max_new_tokens=20, eos_token_id=[], pad_token_id=0, do_sample=True,
                 should_stop=lambda new: looks.append(new.shape[1]) or torch.zeros(new.shape[0], dtype=torch.bool))
    assert looks == []


def test_scoring_reads_the_checks_with_its_scores(monkeypatch):
    """Every projection of the batch runs before the error: the checks are read once, at the end."""
    from path_eval.lm import scoring
    monkeypatch.setattr(scoring, "PROJECTION_ROWS", 1)
    rows = IDS.tolist()
    for score, rows_projected in (
            (lambda model: scoring.score_batch(model, rows, [row[-3:] for row in rows], pad_id=0, prefill_chunk=4), 6),
            (lambda model: scoring.next_token_nll(model, rows[0], prefill_chunk=4), len(rows[0]) - 1)):
        model, projections = _checked(), []
        model.get_output_embeddings().register_forward_hook(lambda *args: projections.append(1))
        with pytest.raises(PathEvalError, match=NAMED):
            score(model)
        assert len(projections) == rows_projected
    assert torch.isfinite(scoring.next_token_nll(_checked(None), rows[0], prefill_chunk=4)).all()


def test_sampling_checks_at_once_inside_a_deferred_block():
    looks = []
    with pytest.raises(PathEvalError, match=NAMED):
        with deferred_nan_checks():
            generate(_checked(), IDS, max_new_tokens=20, eos_token_id=[], pad_token_id=0, do_sample=True,
                     should_stop=lambda new: looks.append(1) or torch.zeros(new.shape[0], dtype=torch.bool))
    assert looks == []
