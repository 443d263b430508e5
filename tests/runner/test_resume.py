"""A real run killed mid-way and started again with the same arguments finishes with exactly the
results of an uninterrupted run, reusing the requests finished before the kill."""
import json
import signal
import sqlite3
import subprocess
import sys
import time

from path_eval.cli import main
from path_eval.results import load_records
from path_eval.run_folder import sample_log
from tests.helpers import ROOT, finished_requests, fixture_data, save_tiny_model


def test_killed_run_resumes_without_losing_or_recomputing(tmp_path, capsys):
    model = save_tiny_model(tmp_path / "model")
    data = fixture_data(tmp_path / "data", "hellaswag")
    limit, choices = 20, 4  # the fixture's 20 HellaSwag rows: 80 requests
    requests = limit * choices
    arguments = lambda out: ["run", "--suite", "table2", "--tasks", "hellaswag", "--model", str(model),  # noqa: E731
                             "--data-dir", str(data), "--limit", str(limit), "--batch-size", "2", "--out", str(out)]
    command = lambda out: [sys.executable, "eval.py", *arguments(out)]  # noqa: E731
    out = tmp_path / "killed"
    process = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while finished_requests(out) < 16 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = finished_requests(out)
    assert 16 <= done_before < requests, "the run was not caught mid-way"
    assert not (out / "results.json").exists()

    resumed = subprocess.run(command(out) + ["--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    # it says so, even under --quiet, with the requests the killed run had committed
    lines = resumed.stderr.splitlines()
    assert f"resumed: {done_before} of {requests} requests and batches reused from {out / 'resume'}" in lines
    # and at the start, before any work on the model
    assert lines[0] == (f"resuming model: {done_before} finished requests and batches, 0 corpus blocks saved in {out}; "
                        "they are reused, not computed again")
    # the uninterrupted run to compare with, in this process: its start-up is not what is tested
    assert main(arguments(tmp_path / "fresh")) == 0
    assert "resumed:" not in capsys.readouterr().err
    a, b = load_records(out), load_records(tmp_path / "fresh")
    assert [(r.task, r.metric, r.value, r.n) for r in a] == [(r.task, r.metric, r.value, r.n) for r in b]
    # the provenance totals both segments: every request computed once, none twice
    assert a[0].provenance.requests_computed == requests == b[0].provenance.requests_computed
    [cache] = (out / "resume").glob("*.db")
    with sqlite3.connect(cache) as db:  # data, never pickles: each row reads back as JSON
        assert all(isinstance(json.loads(value), list) for (value,) in db.execute("SELECT value FROM requests"))
    lines = (out / "samples" / "model" / "hellaswag.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["doc_id"] for x in lines) == list(range(limit))  # none lost, none twice
    [samples] = (out / "lm_eval" / "model").glob("samples_hellaswag_*.jsonl")  # lm-eval's layout: written once
    assert sorted(json.loads(x)["doc_id"] for x in samples.read_text().splitlines()) == list(range(limit))
    assert len(list((out / "lm_eval" / "model").glob("results_*.json"))) == 1


def test_default_output_folder_is_the_same_for_the_same_command():
    from path_eval.cli import build_parser, default_out
    from path_eval.suites import load_suite

    parse, table2 = build_parser().parse_args, load_suite("table2")
    base = ["run", "--suite", "table2", "--model", "m", "--data-dir", "d", "--limit", "5"]
    first, again = default_out(parse(base), table2), default_out(parse(base + ["--batch-size", "8"]), table2)
    assert first == again and first.parent.name == "runs" and first.name.startswith("table2-")
    assert default_out(parse(base + ["--dtype", "bfloat16"]), table2) != first


def test_killed_flipflop_run_keeps_its_finished_batches(tmp_path, capsys):
    """Flip-flop asks lm-eval nothing: its argmax batches are kept in the resume cache, so a run killed
    after a model's batches computes none of them again, and finishes with an uninterrupted run's
    results and sample logs."""
    sequences = 256  # of the task's 512: 8 batches a model, the kill's window in the second still 6 wide
    arguments = lambda out: ["run", "--suite", "ci", "--tasks", "flipflop_sparse", "--model",  # noqa: E731
                             "zoo:flipflop_rope", "zoo:flipflop_path", "--limit", str(sequences), "--out", str(out)]
    command = lambda out: [sys.executable, "eval.py", *arguments(out)]  # noqa: E731
    batches = 2 * sequences // 32  # two models, 32 sequences to a batch
    out = tmp_path / "killed"
    process = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while finished_requests(out) < batches // 2 + 2 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before = finished_requests(out)
    assert batches // 2 + 2 <= done_before < batches, "the run was not caught in the second model"
    assert not (out / "results.json").exists()

    resumed = subprocess.run(command(out) + ["--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    lines = resumed.stderr.splitlines()
    assert lines[:2] == [f"resuming {name}: {saved} finished requests and batches, 0 corpus blocks saved in {out}; "
                         "they are reused, not computed again"
                         for name, saved in [("flipflop_rope", batches // 2), ("flipflop_path", done_before - batches // 2)]]
    assert f"resumed: {done_before} of {batches} requests and batches reused from {out / 'resume'}" in lines
    assert main(arguments(tmp_path / "fresh")) == 0  # the uninterrupted run, in this process
    assert "resum" not in capsys.readouterr().err
    a, b = load_records(out), load_records(tmp_path / "fresh")
    assert [(r.model, r.task, r.metric, r.value, r.stderr, r.n) for r in a] == \
        [(r.model, r.task, r.metric, r.value, r.stderr, r.n) for r in b]
    for model in ("flipflop_rope", "flipflop_path"):  # every sequence logged once, as in the fresh run
        log = lambda run: sample_log(run, model, "flipflop_sparse@512").read_text()  # noqa: E731
        assert log(out) == log(tmp_path / "fresh")
