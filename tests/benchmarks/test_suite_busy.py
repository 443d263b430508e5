"""The suite-busy bench on the CPU with a stand-in sampler (the bench itself samples nvidia-smi on the
H200): readings matched to the run's requests spans by their stamps, and its refusals."""
from __future__ import annotations

import json
import sys

import pytest

from benchmarks import suite_busy

SAMPLER = f"{sys.executable} -c \"import time\nwhile True:\n    print(' 87', flush=True)\n    time.sleep(0.02)\""


def test_the_mean_counts_the_readings_stamped_inside_any_span():
    readings = [(0.5, 10.0), (1.0, 20.0), (1.5, 40.0), (2.5, 80.0), (3.0, 100.0), (4.5, 0.0)]
    assert suite_busy.mean_within(readings, [(1.0, 1.5), (3.0, 4.0)]) == (pytest.approx((20 + 40 + 100) / 300), 3)
    assert suite_busy.mean_within(readings, [(5.0, 6.0)]) == (None, 0)


def test_readings_inside_the_requests_spans_make_the_busy_share(tmp_path, capsys):
    work = tmp_path / "work"
    out = tmp_path / "results" / "bench" / "ci_busy_cpu.json"
    argv = ["--suite", "ci", "--model", "zoo:fox", "--tasks", "niah_single_1", "--limit", "2", "--device", "cpu",
            "--batch-size", "2", "--work", str(work), "--sample-ms", "20",
            "--sampler", SAMPLER, "--out", str(out)]
    assert suite_busy.main(argv) == 0
    data = json.loads(out.read_text())
    run = data["run"]
    assert data["meta"]["suite"] == "ci" and run["readings_in_requests"] > 0 and run["readings_in_run"] > run[
        "readings_in_requests"]
    assert run["requests_s"] > 0 and run["wall_s"] > run["requests_s"]
    assert run["busy_requests"] == run["busy_run"] == 0.87  # the stand-in's readings, parsed
    timings = json.loads((work / "run" / "timings.json").read_text())
    assert {name for name, _, _ in timings["spans"][0]} >= {"tokenizer", "load", "samples", "requests", "write"}
    assert all(start <= end for _, start, end in timings["spans"][0])
    assert "GPU busy" in capsys.readouterr().out
    page = suite_busy.render_suite_busy(tmp_path / "results")
    assert "`results/bench/ci_busy_cpu.json`" in page and "| wall s |" in page


def test_without_nvidia_smi_the_refusal_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    assert suite_busy.main(["--work", str(tmp_path / "w"), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nvidia-smi is not on PATH") and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "w").exists()
