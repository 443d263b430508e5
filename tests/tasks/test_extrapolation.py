"""Length-extrapolation protocol: block cutting, Gutenberg stripping, chunked == full scoring, and
the suite end to end on the offline stand-in corpora."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from path_eval.lm import PathEvalLM
from path_eval.lm.scoring import next_token_nll
from path_eval.models.random_checkpoint import random_model
from path_eval.evaluators.corpus import score_corpus
from path_eval.suites import load_suite
from path_eval.tasks.extrapolation import blocks, bucket_edges, strip_gutenberg
from tests.helpers import fixture_data, spread_weights
from tests.shared_data import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]


def test_blocks_keep_every_token_once_and_drop_only_the_tail():
    stream = list(range(10_007))
    cut = list(blocks(iter(stream), 1000))
    assert [len(b) for b in cut] == [1000] * 10
    assert [t for b in cut for t in b] == stream[:10_000]
    assert len(list(blocks(iter(stream), 1000, max_blocks=3))) == 3
    assert bucket_edges(1000, 256) == [(0, 255), (256, 511), (512, 767), (768, 998)]


def test_gutenberg_header_and_footer_are_stripped():
    text = ("The Project Gutenberg EBook of X\nlicence words\n*** START OF THIS PROJECT GUTENBERG EBOOK X ***\n\n"
            "Chapter 1\nIt was a dark night.\n\nEnd of the Project Gutenberg EBook of X, by Y\n\n*** END OF THIS PROJECT GUTENBERG EBOOK X ***\nmore licence\n")
    assert strip_gutenberg(text) == "Chapter 1\nIt was a dark night.\n"
    assert strip_gutenberg("no markers at all\n") == "no markers at all\n"


@pytest.mark.shared_data
def test_real_gutenberg_books_lose_only_the_licence():
    for book in sorted((SHARED_DATA / "gutenberg_books").glob("*.txt")):
        raw = book.read_text(encoding="utf-8", errors="replace")
        body = strip_gutenberg(raw)
        assert "PROJECT GUTENBERG" not in body.upper() and "*** START" not in body
        assert 0.8 * len(raw) < len(body) < len(raw)


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    path = tmp_path_factory.mktemp("ppl")
    model = random_model("path_fox", "tiny", 0)
    spread_weights(model, 0.2)
    model.save_pretrained(path)
    return PathEvalLM(str(path), max_length=4096)


def test_chunked_prefill_scoring_equals_one_full_forward(lm):
    block = torch.randint(0, 32000, (700,), generator=torch.Generator().manual_seed(3)).tolist()
    full = next_token_nll(lm.model, block, None)
    for chunk in (64, 100, 333):
        assert torch.allclose(next_token_nll(lm.model, block, chunk), full, rtol=1e-5, atol=1e-5), chunk
    with torch.no_grad():
        logits = lm.model(torch.tensor([block])).logits[0, :-1]
    expected = -torch.log_softmax(logits, -1).gather(-1, torch.tensor(block[1:])[:, None])[:, 0]
    assert torch.allclose(full, expected, rtol=1e-5, atol=1e-5)


def test_bucketed_perplexity_is_the_same_for_every_chunk_size(lm, tmp_path):
    suite = load_suite("extrapolation").model_copy(update={"bucket_size": 256, "max_blocks": 2})
    task = suite.task("code_standin")
    results = []
    for chunk in (None, 128, 500):
        lm.prefill_chunk = chunk or 10**9
        results.append(score_corpus(lm, task, 900, suite, tmp_path, tmp_path / f"s{chunk}"))
    lm.prefill_chunk = 8192
    for other in results[1:]:
        for a, b in zip(results[0]["buckets"], other["buckets"]):
            assert a[:2] == b[:2] and a[2] == pytest.approx(b[2], rel=1e-5) and a[3] == b[3]
    assert [b[:2] for b in results[0]["buckets"]] == [(0, 255), (256, 511), (512, 767), (768, 898)]
    assert results[0]["blocks"] == 2


def test_suite_runs_offline_on_the_stand_ins_and_writes_reports(lm, tmp_path):
    data = fixture_data(tmp_path / "data", "gutenberg_books")
    out = tmp_path / "out"
    command = [sys.executable, "eval.py", "run", "--suite", "extrapolation", "--tasks", "books_standin,code_standin",
               "--lengths", "1k", "--model", lm.pretrained, "--data-dir", str(data), "--out", str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    records = json.loads((out / "results.json").read_text())
    buckets = [r for r in records if r["bucket"] is not None]
    assert {r["task"] for r in buckets} == {"books_standin", "code_standin"} and len(buckets) == 2 * 1
    assert all(r["length"] == 1024 and r["n"] == 8 for r in records)
    for name in ("perplexity_by_position.csv", "perplexity_by_position.md"):
        assert (out / name).stat().st_size > 100
    assert not (out / "perplexity_by_position.png").exists()  # one position per 1K block: no curve to draw
    assert np.load(out / "curves" / Path(lm.pretrained).name / "books_standin@1024.npy").shape == (1023,)
    too_long = subprocess.run(command[:8] + ["1000k"] + command[9:-1] + [str(tmp_path / "long")], cwd=ROOT,
                              capture_output=True, text=True)  # a new --out: the first is that run's
    assert too_long.returncode == 2 and "cannot fill one block" in too_long.stderr


def test_a_block_that_fits_goes_in_one_pass_with_no_cache(lm, monkeypatch):
    """Off the Triton backend on a GPU a long block is prefilled in chunks; when `one_pass_fits`
    allows, it is one forward that keeps no cache, with the chunked result."""
    from path_eval.lm import scoring

    block = torch.randint(0, 32000, (700,), generator=torch.Generator().manual_seed(4)).tolist()
    calls, real = [], lm.model.hidden_states

    def spy(*args, use_cache, **kwargs):
        calls.append(use_cache)
        return real(*args, use_cache=use_cache, **kwargs)

    monkeypatch.setattr(lm.model, "hidden_states", spy)
    chunked = next_token_nll(lm.model, block, 256)
    assert not scoring.one_pass_fits(lm.model, torch.tensor([block])) and calls == [True, True, False]
    calls.clear()
    monkeypatch.setattr(scoring, "one_pass_fits", lambda model, tokens: True)
    assert torch.allclose(next_token_nll(lm.model, block, 256), chunked, rtol=1e-5, atol=1e-5)
    assert calls == [False]
