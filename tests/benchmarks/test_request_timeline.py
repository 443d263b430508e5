"""The request-timeline bench on the CPU: a real run (its models answering at once, as in
`benchmarks.host_cost`), each model's requests phase split at the adapter's seams."""
from __future__ import annotations

import json
from functools import partial

import pytest

from benchmarks import host_cost, request_timeline
from path_eval.errors import PathEvalError
from path_eval.lm.adapter import PathEvalLM
from path_eval.models import generation, modeling


def test_each_models_requests_phase_splits_into_its_parts(tmp_path, monkeypatch):
    argv = ["--model", "zoo", "--tasks", "niah_single_1", "--lengths", "1k", "--device", "cpu",
            "--attention", "torch", "--data-dir", str(tmp_path / "data"), "--batch-size", "16",
            "--work", str(tmp_path / "work"), "--out", str(tmp_path / "bench" / "request_timeline_cpu.json")]
    own = PathEvalLM._generate_batch
    # the stand-in replaces the model's forward for its process: put back after this test
    monkeypatch.setattr(modeling.CausalDecoder, "forward", modeling.CausalDecoder.forward)
    monkeypatch.setattr(generation, "reserve_decoding", generation.reserve_decoding)
    monkeypatch.setattr(request_timeline, "eval_run", partial(host_cost.stand_in_run, 3, 5))
    assert request_timeline.main(argv) == 0
    assert PathEvalLM._generate_batch is own  # the seams are taken out again
    record = json.loads((tmp_path / "bench" / "request_timeline_cpu.json").read_text())
    models = record["run"]["models"]
    assert [m["model"] for m in models] == ["fox", "path", "path_fox", "rope"]  # the study's text models
    timings = json.loads((tmp_path / "work" / "run" / "timings.json").read_text())["spans"][0]
    requests = [end - start for phase, start, end in timings if phase == "requests"]
    for model, span in zip(models, requests):
        # each model's own calls: one generate_until, and a generation in each of its four batches
        assert model["calls"] == {"generate_until": 1, "generate": 4} and model["batches"] == 64 // 16
        parts = [model[part] for part in request_timeline.PARTS]
        assert all(p >= -0.002 for p in parts) and abs(model["requests_s"] - span) < 0.002, model  # ms rounding
        assert model["gpu_span_s"] is None  # no GPU here
    lines = request_timeline.render_request_timeline(tmp_path).splitlines()
    assert "`results/bench/request_timeline_cpu.json`" in lines[0]
    assert [line.split(" | ")[0] for line in lines[4:]] == ["| fox", "| path", "| path_fox", "| rope"]


def test_a_failed_run_says_why_in_its_own_line_and_writes_nothing(tmp_path, capsys):
    """The run's own refusal is the one line (here: no GPU on this machine), its exit code the bench's."""
    argv = ["--data-dir", str(tmp_path), "--device", "cuda:7", "--work", str(tmp_path / "work"),
            "--out", str(tmp_path / "out.json")]
    assert request_timeline.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cuda" in err and not (tmp_path / "out.json").exists()


def timeline(model: str, requests: float, generate: float) -> dict:
    return {"model": model, "requests_s": requests, "lm_eval_s": 1.0, "between_batches_s": 0.5,
            "around_generate_s": 0.5, "generate_s": generate, "gpu_span_s": generate,
            "generate_beyond_gpu_s": 0.0, "batches": 3}


def write_ab(bench, label: str, baseline: float, shipped: float, differ: int) -> None:
    bench.mkdir(parents=True, exist_ok=True)
    for side, generate in (("baseline", baseline), ("shipped", shipped)):
        record = {"meta": {"command": "python -m benchmarks.request_timeline", "machine": "GPU X",
                           "revision": "abc1234", "batch_size": 32},
                  "run": {"wall_s": 9.0, "models": [timeline("path", generate + 2.0, generate)]}}
        (bench / f"request_timeline_h100_{side}{label}.json").write_text(json.dumps(record))
    ab = {"meta": {"commands": [], "note": "timeline-ab: AB_BASELINE=old (1111111's files: a.py)"},
          "pairs": [{"cells": [{"b_minus_a": 0.0}, {"b_minus_a": 1.5}],
                     "generations": [{"samples": 64, "differ": differ}, {"samples": 32, "differ": 0}]}]}
    (bench / f"timeline_ab_h100{label}.json").write_text(json.dumps(ab))


def test_an_ab_pair_renders_side_by_side_with_its_ratio_and_differences(tmp_path):
    """Both sides' timelines in one table, shipped over baseline part by part, and the counts of
    generations and scores that differ; the request-timeline block leaves the pair's sides to it."""
    write_ab(tmp_path / "bench", "_abc1234", baseline=8.0, shipped=6.0, differ=2)
    text = request_timeline.render_timeline_ab(tmp_path)
    assert "`results/bench/timeline_ab_h100_abc1234.json`" in text and "1111111's files: a.py" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| path")]
    assert [row[1] for row in rows] == ["baseline", "shipped", "shipped / baseline"]
    assert rows[2][2] == "0.80x" and rows[2][6] == "0.75x"  # requests 8/10, generate 6/8
    assert "differ between the two runs: 2 of 96 (in 2 logs); scores that differ: 1 of 2." in text
    assert request_timeline.render_request_timeline(tmp_path).startswith("No record yet")


def test_an_ab_record_without_both_sides_is_one_line_naming_the_fix(tmp_path):
    write_ab(tmp_path / "bench", "_abc1234", baseline=8.0, shipped=6.0, differ=0)
    (tmp_path / "bench" / "request_timeline_h100_baseline_abc1234.json").unlink()
    with pytest.raises(PathEvalError, match=r"^timeline_ab_h100_abc1234\.json has no "
                                           r"request_timeline_h100_baseline_abc1234\.json beside it: commit"):
        request_timeline.render_timeline_ab(tmp_path)
