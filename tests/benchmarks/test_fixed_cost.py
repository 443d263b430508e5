"""The fixed-cost bench on a tiny random PaTH model on the CPU (the bench itself runs on the H200): two
real `eval.py run` processes, cold then warm, each part from the run's own accounts."""
from __future__ import annotations

import json
import shutil

import pytest

from benchmarks import fixed_cost
from path_eval.runner.processes import PHASES


def test_cold_then_warm_run_part_by_part(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # recorded: whether the runs' imports compile sources
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    out = tmp_path / "results" / "bench" / "fixed_cost_cpu.json"
    assert fixed_cost.main(["--shape", "tiny", "--device", "cpu", "--length", "512", "--requests", "2", "--batch-size",
                            "2", "--work", str(tmp_path / "work"), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["command"].startswith("python -m benchmarks.fixed_cost --shape tiny")
    assert data["meta"]["bytecode_settings"] == {"PYTHONDONTWRITEBYTECODE": "1"}
    cold, warm = data["records"]
    assert (cold["run"], warm["run"]) == ("cold", "warm")
    for r in (cold, warm):
        assert list(r["phases"]) == list(PHASES) and r["requests_computed"] == 2  # a fresh run folder each
        assert r["fixed_s"] == pytest.approx(r["wall_s"] - r["generation_s"], abs=0.002)
        assert 0 < r["generation_s"] < r["phases"]["requests"] < r["wall_s"]
        assert 0 < r["imports_alone_s"] and 0 < r["phases"]["start"] < r["wall_s"]
        main_thread = sum(r["phases"][p] for p in fixed_cost.MAIN_THREAD_PHASES)
        assert r["other_s"] == pytest.approx(r["wall_s"] - main_thread, abs=0.005) and r["other_s"] > 0
    # the cold run froze the samples in its fresh cache, the warm one read them
    assert len(list((tmp_path / "work" / "cache").glob("frozen/**/*.jsonl"))) == 1
    assert cold["phases"]["samples"] > warm["phases"]["samples"]
    assert warm["compile_s"] == pytest.approx(cold["generation_s"] - warm["generation_s"], abs=0.002)
    assert "warm: wall" in capsys.readouterr().out
    page = fixed_cost.render_fixed_cost(tmp_path / "results")
    assert "`results/bench/fixed_cost_cpu.json`" in page and "| warm |" in page and "Issue 47's targets" in page
    assert "batch 2. PYTHONDONTWRITEBYTECODE=1." in page


@pytest.mark.parametrize("argv, line", [
    (["--requests", "0"], "--requests 0: give 1 or more"),
    (["--task", "nope", "--device", "cpu"], "--task nope: the ruler suite has"),
])
def test_bad_arguments_are_one_line(argv, line, tmp_path, capsys):
    assert fixed_cost.main([*argv, "--work", str(tmp_path / "work"), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and line in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
    shutil.rmtree(tmp_path / "work", ignore_errors=True)


def test_the_heading_tells_default_settings_from_a_record_without_them():
    assert fixed_cost.bytecode_line({}) == ""  # a record from before the field
    assert fixed_cost.bytecode_line({"bytecode_settings": {}}) == " No bytecode variable set."
    assert fixed_cost.bytecode_line({"bytecode_settings": {"PYTHONPYCACHEPREFIX": "/tmp/pyc"}}) == \
        " PYTHONPYCACHEPREFIX=/tmp/pyc."
