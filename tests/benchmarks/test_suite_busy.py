"""The suite-busy bench on the CPU with a stand-in sampler (the bench itself samples nvidia-smi on the
H200): readings matched to the run's requests spans by their stamps, and its refusals."""
from __future__ import annotations

import json
import sys
import time

import pytest

from benchmarks import suite_busy
from path_eval.results.provenance import git_revision

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
    assert data["meta"]["suite"] == "ci" and data["meta"]["revision"] == git_revision()
    assert run["readings_in_requests"] > 0 and run["readings_in_run"] > run[
        "readings_in_requests"]
    assert run["requests_s"] > 0 and run["wall_s"] > run["requests_s"]
    assert run["busy_requests"] == run["busy_run"] == 0.87  # the stand-in's readings, parsed
    timings = json.loads((work / "run" / "timings.json").read_text())
    assert {name for name, _, _ in timings["spans"][0]} >= {"tokenizer", "load", "samples", "requests", "write"}
    assert all(start <= end for _, start, end in timings["spans"][0])
    assert "GPU busy" in capsys.readouterr().out
    [model] = run["models"]  # one model: its own phases are the run's
    assert model["model"] == "fox" and model["busy_requests"] == 0.87
    assert model["readings_in_requests"] == run["readings_in_requests"]
    assert model["phases"]["requests"] == pytest.approx(run["requests_s"], abs=0.01)
    assert set(model["phases"]) >= {"tokenizer", "samples", "load_wait", "requests"} and "write" not in model["phases"]
    page = suite_busy.render_suite_busy(tmp_path / "results")
    assert "`results/bench/ci_busy_cpu.json`" in page and "| wall s |" in page and "| fox |" in page


def test_each_model_gets_its_own_spans_and_readings():
    spans = [["tokenizer", 0, 1], ["samples", 1, 2], ["load", 1, 1.5], ["load_wait", 2, 2], ["requests", 2, 4],
             ["tokenizer", 4, 4.5], ["samples", 4.5, 5], ["requests", 5, 9], ["write", 9, 10]]
    readings = [(3.0, 50.0), (6.0, 10.0), (8.0, 30.0), (9.5, 100.0)]
    rows = suite_busy.per_model(spans, ["a", "b", "c"], readings)
    assert [r["model"] for r in rows] == ["a", "b"]
    assert rows[0]["phases"] == {"tokenizer": 1, "samples": 1, "load": 0.5, "load_wait": 0, "requests": 2}
    assert rows[1]["busy_requests"] == 0.2 and rows[1]["readings_in_requests"] == 2
    assert rows[0]["busy_requests"] == 0.5


def test_without_nvidia_smi_the_refusal_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    assert suite_busy.main(["--work", str(tmp_path / "w"), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nvidia-smi is not on PATH") and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "w").exists()


def stand_in_run(out, write_timings: bool) -> list[str]:
    """A run that writes one finished model's phases (as the runner does after each model), then keeps
    going until it is stopped."""
    spans = "[['samples', start, start + 0.2], ['requests', start + 0.2, now]]"
    script = (f"import json, pathlib, time\nout = pathlib.Path({str(out)!r}); out.mkdir(parents=True)\n"
              "start = time.time(); time.sleep(1.5); now = time.time()\n"
              + (f"out.joinpath('timings.json').write_text(json.dumps({{'processes': [{{'requests': 1.49}}], "
                 f"'spans': [{spans}]}}))\n" if write_timings else "")
              + "time.sleep(600)\n")
    return [sys.executable, "-c", script]


def test_a_run_past_its_budget_is_stopped_and_recorded_as_stopped(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite_busy, "run_command", lambda args, out: stand_in_run(out, write_timings=True))
    out = tmp_path / "results" / "bench" / "zoo_study_busy_cpu.json"
    began = time.time()
    assert suite_busy.main(["--work", str(tmp_path / "work"), "--sampler", SAMPLER, "--sample-ms", "20",
                            "--budget-s", "3", "--device", "cpu", "--out", str(out)]) == 0
    assert time.time() - began < 60  # stopped at the budget, not after the stand-in's 600 s
    run = json.loads(out.read_text())["run"]
    assert run["stopped_at_budget_s"] == 3 and run["models_finished"] == 1 and run["wall_s"] >= 3
    assert run["requests_s"] > 1 and run["busy_requests"] == 0.87 and run["readings_in_requests"] > 0
    assert "stopped at the budget, 1 models finished" in capsys.readouterr().out
    page = suite_busy.render_suite_busy(tmp_path / "results")
    assert "stopped at" in page and page.rstrip().endswith("| no |")


def test_a_run_stopped_before_any_model_finished_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite_busy, "run_command", lambda args, out: stand_in_run(out, write_timings=False))
    out = tmp_path / "busy.json"
    assert suite_busy.main(["--work", str(tmp_path / "work"), "--sampler", SAMPLER, "--sample-ms", "20",
                            "--budget-s", "2", "--device", "cpu", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "stopped at --budget-s 2 before it finished a model" in err and err.count("\n") == 1
    assert not out.exists()


def test_the_run_command_passes_the_attention_backend_on():
    args = suite_busy.parse_args(["--attention", "triton", "--data-dir", "DATA", "--work", "w"])
    command = suite_busy.run_command(args, args.work / "run")
    assert command[command.index("--attention") + 1] == "triton" and "--data-dir" in command
    assert "--attention" not in suite_busy.run_command(suite_busy.parse_args(["--work", "w"]), args.work / "run")
