"""Two data-parallel processes (torchrun on the CPU: gloo; `accelerate launch --multi_gpu` on GPUs
takes the same path) give exactly the results of one process: every sample scored once, merged
on the first process, which alone writes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from path_eval.results import load_results
from tests.helpers import ROOT, fixture_data, save_tiny_model


def run(launcher: list[str], args: list[str], out: Path) -> list:
    done = subprocess.run(launcher + ["eval.py", "run", *args, "--out", str(out), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return load_results(out)


@pytest.mark.parametrize("suite, extra", [
    ("table2", ["--tasks", "piqa", "--limit", "20"]),
    ("phonebook", ["--lengths", "1k", "--limit", "3"]),
])
def test_two_processes_give_the_results_of_one(tmp_path, monkeypatch, suite, extra):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    model = save_tiny_model(tmp_path / "model")
    data = fixture_data(tmp_path / "data", "piqa")
    args = ["--suite", suite, "--model", str(model), "--data-dir", str(data), *extra]
    one = run([sys.executable], args, tmp_path / "one")
    two = run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"], args, tmp_path / "two")
    assert [(r.task, r.length, r.metric, r.n) for r in one] == [(r.task, r.length, r.metric, r.n) for r in two]
    assert [r.value for r in two] == pytest.approx([r.value for r in one], abs=1e-9)
    assert {r.provenance.processes for r in two} == {2} and {r.provenance.processes for r in one} == {1}
    logs = sorted(p.name for p in (tmp_path / "two" / "samples" / "model").glob("*.jsonl"))
    # lm-eval evens the processes' shares of each task with copies of a request, whose answers it drops
    computed_one, computed_two = one[0].provenance.requests_computed, two[0].provenance.requests_computed
    assert computed_one <= computed_two <= computed_one + len(logs)
    assert logs == sorted(p.name for p in (tmp_path / "one" / "samples" / "model").glob("*.jsonl"))
    for name in logs:
        lines = lambda run: (tmp_path / run / "samples" / "model" / name).read_text().splitlines()  # noqa: E731
        assert len(lines("two")) == len(lines("one"))
    # lm-eval's layout, written by the first process alone: the same tasks, every document once
    lm_eval_docs = lambda run: {p.name.rsplit("_", 1)[0]: sorted(json.loads(x)["doc_id"] for x in p.read_text().splitlines())  # noqa: E731
                                for p in (tmp_path / run / "lm_eval" / "model").glob("samples_*.jsonl")}
    assert lm_eval_docs("two") == lm_eval_docs("one") != {}


def test_corpus_tasks_refuse_several_processes(tmp_path):
    model = save_tiny_model(tmp_path / "model")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "eval.py", "run",
                           "--suite", "extrapolation", "--tasks", "code_standin", "--lengths", "512", "--model",
                           str(model), "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and "not shared between processes" in done.stderr
    assert not (tmp_path / "out" / "results.json").exists()
