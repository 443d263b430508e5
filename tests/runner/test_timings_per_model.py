"""A run writes its phase times after each model, so a run stopped between models (a budget, a
signal) still says where the time of the models it finished went (benchmarks.suite_busy reads them)."""
import json
import signal
import subprocess
import sys
import time

from tests.helpers import ROOT, fixture_data, save_tiny_model


def test_a_run_killed_after_its_first_model_has_that_models_phases(tmp_path):
    first, second = save_tiny_model(tmp_path / "first"), save_tiny_model(tmp_path / "second", seed=1)
    data = fixture_data(tmp_path / "data", "hellaswag")
    out = tmp_path / "run"
    command = [sys.executable, "eval.py", "run", "--suite", "table2", "--tasks", "hellaswag", "--model", str(first),
               str(second), "--data-dir", str(data), "--limit", "20", "--batch-size", "1", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timings, deadline = out / "timings.json", time.time() + 240
    while not timings.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert timings.exists() and not (out / "results.json").exists(), "the run was not caught between its models"
    spans = json.loads(timings.read_text())["spans"][0]
    assert [name for name, _, _ in spans].count("requests") == 1  # the first model's, not the second's
    assert all(start <= end for _, start, end in spans)
