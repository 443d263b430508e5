"""The request-timeline bench on the CPU: a real run (its models answering at once, as in
`benchmarks.host_cost`), each model's requests phase split at the adapter's seams."""
from __future__ import annotations

import json
from functools import partial

from benchmarks import host_cost, request_timeline
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
