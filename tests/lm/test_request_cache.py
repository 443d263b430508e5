"""The resume cache stores data, never pickles: answers come back equal, nothing is recomputed, and a
poisoned or pickled cache is refused without running anything."""
import hashlib
import json
import pickle
import sqlite3

import numpy as np
import pytest
from lm_eval.api.instance import Instance

from path_eval.errors import PathEvalError
from path_eval.lm import PathEvalLM
from path_eval.lm.request_cache import RequestCache
from path_eval.models.random_checkpoint import random_model


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("path")
    random_model("path", "tiny", 0, hidden_size=32, num_hidden_layers=1, max_position_embeddings=256).save_pretrained(path)
    return path


def requests(kind, args_list):
    return [Instance(request_type=kind, doc={}, arguments=a, idx=i) for i, a in enumerate(args_list)]


KINDS = {
    "loglikelihood": [("The grass is", " green."), ("One two", " three")],
    "loglikelihood_rolling": [("A whole document to score, word by word.",)],
    "generate_until": [("The sky is", {"until": ["\n"], "max_gen_toks": 6, "do_sample": False})],
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_run_reads_every_answer_back(checkpoint, tmp_path, kind):
    first = PathEvalLM(str(checkpoint))
    first.use_request_cache(tmp_path / "cache.db")
    computed = getattr(first, kind)(requests(kind, KINDS[kind]))
    assert first.requests_computed > 0

    again = PathEvalLM(str(checkpoint))
    again.use_request_cache(tmp_path / "cache.db")
    assert getattr(again, kind)(requests(kind, KINDS[kind])) == computed
    assert again.requests_computed == 0
    assert len(again.request_cache) == len(KINDS[kind])


def test_only_missing_requests_are_computed_in_order(checkpoint, tmp_path):
    kind = "loglikelihood"
    pairs = KINDS[kind] + [("Red, green and", " blue")]
    cache = RequestCache(tmp_path / "cache.db")
    cache.add_partial(kind, pairs[1], (-1.5, True))
    lm = PathEvalLM(str(checkpoint))
    lm.use_request_cache(tmp_path / "cache.db")
    answers = lm.loglikelihood(requests(kind, pairs))
    assert answers[1] == (-1.5, True)
    assert lm.requests_computed == 2
    fresh = PathEvalLM(str(checkpoint)).loglikelihood(requests(kind, [pairs[0], pairs[2]]))
    assert [answers[0], answers[2]] == fresh


class Payload:
    """Unpickling this would create the marker file: what a poisoned row of a pickled cache does."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickled_cache_is_refused_and_never_unpickled(tmp_path):
    from sqlitedict import SqliteDict

    marker = tmp_path / "code-ran"
    path = tmp_path / "old.db"
    with SqliteDict(str(path), autocommit=True) as old:  # lm-eval's format: pickled rows in table "unnamed"
        old["key"] = Payload(marker)
    assert not marker.exists()
    with pytest.raises(PathEvalError, match="pickled rows .* delete it"):
        RequestCache(path)
    assert not marker.exists()


def test_a_row_that_is_not_json_is_a_clean_error(tmp_path):
    path = tmp_path / "cache.db"
    cache = RequestCache(path)
    cache.add_partial("generate_until", ("prompt", {}), "text")
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE requests SET value = ?", (pickle.dumps(Payload(tmp_path / "x")),))
    with pytest.raises(PathEvalError, match="corrupt row"):
        RequestCache(path).get("generate_until", ("prompt", {}))
    assert not (tmp_path / "x").exists()


def test_a_file_that_is_not_sqlite_is_a_clean_error(tmp_path):
    path = tmp_path / "cache.db"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(PathEvalError, match="not a readable sqlite file"):
        RequestCache(path)


def test_each_run_keeps_its_counters_and_sees_the_earlier_ones(tmp_path):
    """A resumed run's provenance totals its segments: each run of the cache stores its counters
    with every request, and a later run reads back those of the runs before it, not its own."""
    path = tmp_path / "cache.db"
    work = {"tokens": 0, "requests": 0}
    first = RequestCache(path, progress=lambda: dict(work))
    for n in range(3):
        work = {"tokens": 10 * (n + 1), "requests": n + 1}
        first.add_partial("generate_until", (f"prompt {n}", {}), "text")
    first.connection.close()  # killed here: the counters of its three requests are already committed
    second = RequestCache(path, progress=lambda: {"tokens": 5, "requests": 1})
    assert second.earlier_segments() == [{"tokens": 30, "requests": 3}]
    second.add_partial("generate_until", ("prompt 3", {}), "text")
    assert second.earlier_segments() == [{"tokens": 30, "requests": 3}]
    assert RequestCache(path).earlier_segments() == [{"tokens": 30, "requests": 3}, {"tokens": 5, "requests": 1}]


def committed_rows(path) -> int:
    """The rows another reader of the file sees: what a run killed now would find."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]


def test_a_batch_is_committed_once_with_its_counters(tmp_path):
    """Inside `one_commit` the rows wait for its end (a run killed meanwhile recomputes the batch,
    never half of it with counters that count all of it); at its end they are committed with the
    counters that count them, also when the batch ends in an error."""
    path = tmp_path / "cache.db"
    work = {"requests": 0}
    cache = RequestCache(path, progress=lambda: dict(work))
    with cache.one_commit():
        for n in range(3):
            work = {"requests": n + 1}
            cache.add_partial("generate_until", (f"prompt {n}", {}), "text")
            assert committed_rows(path) == 0 and cache.get("generate_until", (f"prompt {n}", {})) == "text"
    assert committed_rows(path) == 3
    assert RequestCache(path).earlier_segments() == [{"requests": 3}]
    with pytest.raises(RuntimeError):
        with cache.one_commit():
            work = {"requests": 4}
            cache.add_partial("generate_until", ("prompt 3", {}), "text")
            raise RuntimeError("the batch's next answer failed")
    assert committed_rows(path) == 4 and RequestCache(path).earlier_segments() == [{"requests": 4}]
    cache.add_partial("generate_until", ("prompt 4", {}), "text")  # outside: committed at once, as before
    assert committed_rows(path) == 5


def test_the_adapter_commits_a_generation_batch_once(checkpoint, tmp_path, monkeypatch):
    """generate_until's batch of requests: one commit for all of them, the answers all stored."""
    lm = PathEvalLM(str(checkpoint), batch_size=4)
    lm.use_request_cache(tmp_path / "cache.db")
    commits = []
    monkeypatch.setattr(lm.request_cache, "save_progress", lambda own=lm.request_cache.save_progress: (
        commits.append(committed_rows(tmp_path / "cache.db")), own()))
    prompts = [(f"Prompt {n}:", {"until": ["\n"], "max_gen_toks": 3}) for n in range(4)]
    lm.generate_until(requests("generate_until", prompts))
    assert commits == [0] and committed_rows(tmp_path / "cache.db") == 4


def test_a_batch_that_stores_nothing_commits_nothing(tmp_path):
    """A rolling document's window batches store no row (the document's total is the row): their
    counters wait for it instead of being committed alone, which a resumed run would count again."""
    path = tmp_path / "cache.db"
    work = {"requests": 0}
    cache = RequestCache(path, progress=lambda: dict(work))
    with cache.one_commit():
        work = {"requests": 2}
    assert RequestCache(path).earlier_segments() == []
    cache.add_partial("loglikelihood_rolling", ("document",), -1.5)
    assert RequestCache(path).earlier_segments() == [{"requests": 2}]


def test_each_request_is_hashed_once_and_stored_under_lm_evals_key(checkpoint, tmp_path, monkeypatch):
    """`answer` hashes a request to look it up and keeps the key for the answer's row; the rows are
    keyed by lm-eval's own `hash_args`, so an earlier cache still finds them."""
    from lm_eval.api.model import hash_args

    from path_eval.lm import request_cache

    hashed = []
    monkeypatch.setattr(request_cache, "hash_args", lambda kind, args: hashed.append(args) or hash_args(kind, args))
    lm = PathEvalLM(str(checkpoint), batch_size=2)
    lm.use_request_cache(tmp_path / "cache.db")
    prompts = [(f"Prompt {n}:", {"until": ["\n"], "max_gen_toks": 2}) for n in range(3)]
    texts = lm.generate_until(requests("generate_until", prompts))
    assert sorted(hashed) == sorted(prompts) and not lm.request_cache._unstored
    with sqlite3.connect(tmp_path / "cache.db") as db:
        rows = dict(db.execute("SELECT key, value FROM requests").fetchall())
    assert rows == {hash_args("generate_until", p): json.dumps(t) for p, t in zip(prompts, texts)}


def test_a_kept_key_is_used_only_for_the_arguments_it_was_made_for(tmp_path):
    """The kept keys are found by the id of a request's first argument; an object made after the
    first is gone can have its id, and must get its own key."""
    from lm_eval.api.model import hash_args

    cache = RequestCache(tmp_path / "cache.db")
    context = "a prompt"
    cache.answer("generate_until", requests("generate_until", [(context, {"max_gen_toks": 1})]), lambda missing: ["x"])
    other = (context, {"max_gen_toks": 2})  # the same first object, other arguments
    assert cache.key("generate_until", other) == hash_args("generate_until", other)


def test_choices_that_share_their_context_are_each_hashed_once(checkpoint, tmp_path, monkeypatch):
    """A multiple-choice doc's loglikelihood requests share one context object (lm-eval builds them
    so): each keeps its own key until its answer is stored."""
    from lm_eval.api.model import hash_args

    from path_eval.lm import request_cache

    hashed = []
    monkeypatch.setattr(request_cache, "hash_args", lambda kind, args: hashed.append(args) or hash_args(kind, args))
    lm = PathEvalLM(str(checkpoint))
    lm.use_request_cache(tmp_path / "cache.db")
    context = "The grass is"
    pairs = [(context, choice) for choice in (" green.", " blue.", " red.")]
    lm.loglikelihood(requests("loglikelihood", pairs))
    assert sorted(hashed) == sorted(pairs) and not lm.request_cache._unstored


@pytest.mark.parametrize("values", [
    np.random.default_rng(0).integers(0, 8, (32, 4096)), np.array([[2**31 - 1, -2**31, 0]]),
    np.array([[2**31, 1]]), np.array([[-2**31 - 1]]), np.random.default_rng(1).integers(0, 9, (2, 3, 4)),
    np.array([7, 8])],
    ids=["flip-flop batch", "int32 limits", "past int32", "below int32", "3-D", "1-D"])
def test_a_batch_row_gives_back_its_integers(tmp_path, values):
    """A batch's answer (an integer per token) is stored packed, as int32 where it fits, else
    int64, and read back equal, as int64; rows of earlier versions (lists of lists) are read too."""
    cache = RequestCache(tmp_path / "cache.db")
    tokens = np.arange(values.size).reshape(values.shape)
    assert np.array_equal(cache.answer_batch("next_token_argmax", tokens, lambda t: values), values)
    with sqlite3.connect(tmp_path / "cache.db") as db:
        [(stored,)] = db.execute("SELECT value FROM requests").fetchall()
    fits = values.min() >= -2**31 and values.max() < 2**31
    assert json.loads(stored)["dtype"] == ("<i4" if fits else "<i8")
    calls = []
    again = RequestCache(tmp_path / "cache.db").answer_batch("next_token_argmax", tokens,
                                                            lambda t: calls.append(t) or values)
    assert not calls and again.dtype == np.int64 and np.array_equal(again, values)
    if values.ndim != 2:
        return  # earlier versions stored 2-D batches only
    earlier = RequestCache(tmp_path / "earlier.db")
    key = (hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest(), list(tokens.shape), str(tokens.dtype))
    earlier.add_partial("next_token_argmax", key, values.tolist())
    found = RequestCache(tmp_path / "earlier.db").answer_batch("next_token_argmax", tokens, lambda t: pytest.fail())
    assert np.array_equal(found, values)


@pytest.mark.parametrize("row", [
    {"shape": [2, 2], "dtype": "<i4", "base64": "not base64!"}, {"shape": [2, 2], "dtype": "<i4", "base64": "AAAAAA=="},
    {"shape": [-1], "dtype": "<i4", "base64": ""}, {"shape": [2, 2], "dtype": "<f8", "base64": "A" * 44},
    {"shape": [1], "dtype": "<i4", "base64": "AAAAAA==", "more": 1}, {"shape": "1"}, {"shape": [1] * 70,
     "dtype": "<i4", "base64": "AAAAAA=="}, {"shape": [2**64, 0], "dtype": "<i4", "base64": ""},
    {"shape": [2**39, 0, 2**39], "dtype": "<i4", "base64": ""},
    {"shape": [1, 4], "dtype": "<i4", "base64": "A" * 22 + "=="},
    [[1, 2], [3]], [[2**70, 1], [1, 1]]],
    ids=["bad base64", "short", "negative shape", "float type", "extra key", "no fields", "70 dimensions",
         "huge dimension", "huge empty", "another shape", "ragged lists", "past int64 lists"])
def test_a_malformed_packed_row_is_a_clean_error(tmp_path, row):
    cache = RequestCache(tmp_path / "cache.db")
    tokens = np.zeros((2, 2), dtype=np.int64)
    key = (hashlib.sha256(tokens.tobytes()).hexdigest(), [2, 2], "int64")
    cache.add_partial("next_token_argmax", key, row)
    with pytest.raises(PathEvalError, match="corrupt row"):
        RequestCache(tmp_path / "cache.db").answer_batch("next_token_argmax", tokens, lambda t: t)
