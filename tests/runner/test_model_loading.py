"""A run loads each model's tokenizer once, beside its weights' thread, and hashes it once: the
sample sets, the model and the provenance share them."""
import importlib

from path_eval.models import identity, loading, tokenizer
from path_eval.plan import resolve_plan
from path_eval.suites import load_suite
from tests.helpers import counted, fixture_data, save_tiny_model

runner = importlib.import_module("path_eval.runner.run")  # the package's `run` is the function


def test_a_run_loads_and_hashes_each_tokenizer_once(tmp_path, monkeypatch):
    model = save_tiny_model(tmp_path / "model", variant="rope")
    plan = resolve_plan(load_suite("table2"), [str(model)], tasks=["piqa"], limit=2,
                        data_dir=fixture_data(tmp_path / "data", "piqa"))
    expected_hash = identity.tokenizer_sha256(tokenizer.load_tokenizer(model))
    calls = {"load": 0, "sha256": 0}
    load, sha256 = counted(calls, "load", tokenizer.load_tokenizer), counted(calls, "sha256", identity.tokenizer_sha256)
    for module in (tokenizer, loading):  # each module holds its own reference
        monkeypatch.setattr(module, "load_tokenizer", load)
    for module in (identity, runner):
        monkeypatch.setattr(module, "tokenizer_sha256", sha256)
    [record] = runner.run(plan, runner.RunOptions(out=tmp_path / "out"))
    assert record.task == "piqa" and record.n == 2
    assert calls == {"load": 1, "sha256": 1}
    assert record.provenance.tokenizer_sha256 == expected_hash
