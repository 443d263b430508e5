"""Table 2 end to end on the committed fixtures (tests/fixtures/data: a few real rows of each set):
our numbers equal stock `lm_eval --model hf` on a RoPE Llama model, and an fla PaTH checkpoint
(which stock lm-eval cannot score) runs the whole suite."""
import json
import shutil
import subprocess
import sys

import pytest
import torch

from path_eval.plan import resolve_plan
from path_eval.results import load_records
from path_eval.runner import RunOptions, run
from path_eval.suites import load_suite
from path_eval.tasks import build_task
from tests.fla_fixtures import write_fla_checkpoint
from tests.helpers import ROOT, fixture_data, spread_weights
from tests.shared_data import DATASETS

LIMIT = 12  # WikiText has 3 documents in the fixtures, the other sets 20 rows


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return fixture_data(tmp_path_factory.mktemp("data"), *(task.name for task in load_suite("table2").tasks))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    from path_eval.models.tokenizer import mistral_v1_directory

    path = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096))
    spread_weights(model, 0.1)
    model.save_pretrained(path)
    for f in mistral_v1_directory().iterdir():
        shutil.copy(f, path)
    return path


def test_table2_equals_stock_lm_eval_hf(llama, data_dir, tmp_path):
    import lm_eval

    suite = load_suite("table2")
    records = run(resolve_plan(suite, [str(llama)], limit=LIMIT, data_dir=data_dir),
                  RunOptions(out=tmp_path, batch_size=4, bootstrap_iters=0))
    ours = {(r.task, r.metric): r for r in records}
    configs = [build_task(t, data_dir, suite).config for t in suite.tasks]
    stock = lm_eval.simple_evaluate(model="hf", model_args={"pretrained": str(llama), "dtype": "float32",
                                                            "max_length": suite.max_length},
                                    tasks=configs, limit=LIMIT, batch_size=4, device="cpu", bootstrap_iters=0,
                                    log_samples=True)
    for task in suite.tasks:
        found = stock["results"][task.lm_eval_task]
        for metric in task.metrics:
            mine, theirs = ours[(task.name, metric.name)].value, found[f"{metric.name},none"]
            if "perplexity" in metric.name:
                assert mine == pytest.approx(theirs, rel=1e-3), (task.name, metric.name)
            else:
                assert mine == theirs, (task.name, metric.name)
        # per sample: the same requests and the same log-likelihoods / choices
        lines = (tmp_path / "samples" / llama.name / f"{task.name}.jsonl").read_text().splitlines()
        mine_samples = {s["doc_id"]: s for s in map(json.loads, lines)}
        rows = len((data_dir / DATASETS[task.name].relpath).read_text().splitlines())
        assert len(mine_samples) == min(LIMIT, rows) == len(stock["samples"][task.lm_eval_task])
        for sample in stock["samples"][task.lm_eval_task]:
            got = mine_samples[sample["doc_id"]]
            assert got["request"] == [list(a) for a in sample["arguments"]]
            theirs = sample["filtered_resps"]
            if task.name == "wikitext":
                assert got["response"][0] == pytest.approx(theirs[0], rel=1e-4)
            else:
                for (ll, greedy), (ll2, greedy2) in zip(got["response"], theirs):
                    assert ll == pytest.approx(ll2, rel=1e-4, abs=1e-3)
    avg = ours[("avg", "acc")].value
    parts = [ours[tuple(ref.split("/"))].value for ref in suite.aggregates[0].mean_of]
    assert avg == pytest.approx(sum(parts) / 6)


def test_fla_path_checkpoint_runs_the_whole_suite_from_the_command_line(data_dir, tmp_path):
    checkpoint = write_fla_checkpoint(tmp_path / "path-fox", "path_fox", vocab_size=32000, hidden_size=64)
    out = tmp_path / "out"
    run_ = subprocess.run([sys.executable, "eval.py", "run", "--suite", "table2", "--model", str(checkpoint),
                           "--data-dir", str(data_dir), "--limit", "4", "--bootstrap-iters", "0", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert run_.returncode == 0, run_.stderr[-2000:]
    records = load_records(out)
    suite = load_suite("table2")
    expected = {(t.name, m.name) for t in suite.tasks for m in t.metrics} | {("avg", "acc")}
    assert {(r.task, r.metric) for r in records} == expected
    for r in records:
        assert r.model == "path-fox" and r.provenance.variant == "path_fox" and r.provenance.model_type == "path_attn"
        assert r.provenance.max_length == 2048 and r.provenance.tokens > 0
        assert len(r.provenance.tokenizer_sha256) == 64 and r.provenance.data_fingerprint
    assert all((out / "samples" / "path-fox" / f"{t.name}.jsonl").is_file() for t in suite.tasks)
    assert "Avg" in run_.stdout


@pytest.mark.parametrize("args,message", [
    (["--suite", "tabel2"], "unknown suite 'tabel2'"),
    (["--suite", "table2", "--tasks", "piqa,boolq"], "suite table2 has no task 'boolq'"),
    (["--suite", "table2", "--lengths", "4k"], "suite table2 has no context lengths"),
    (["--suite", "table2", "--tasks", "piqa", "--data-dir", "EMPTY"], "missing data file .*baber/piqa/default/validation.jsonl"),
    (["--suite", "table2", "--tasks", "piqa", "--limit", "0"], "--limit: 0 is below 1"),
])
def test_bad_requests_fail_with_one_line_and_no_results(args, message, llama, data_dir, tmp_path):
    import re

    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    if "--data-dir" not in args:
        args += ["--data-dir", str(data_dir)]
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "eval.py", "run", "--model", str(llama), "--out", str(out), *args],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and re.search(message, last), result.stderr[-1500:]
    assert not (out / "results.json").exists()


def test_malformed_suite_is_one_line(tmp_path, llama, data_dir):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndescription: x\ntasks:\n  - {name: piqa, lm_eval_task: piqa}\n")
    result = subprocess.run([sys.executable, "eval.py", "run", "--suite", str(bad), "--model", str(llama),
                             "--data-dir", str(data_dir)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert "malformed suite" in result.stderr and "tasks.0.metrics: Field required" in result.stderr
