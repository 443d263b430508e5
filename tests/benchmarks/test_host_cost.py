"""The host-cost bench on the CPU: a real run whose models answer at once, its record and table."""
from __future__ import annotations

import json

from benchmarks import host_cost
from path_eval.models.tokenizer import load_tokenizer
from path_eval.models.zoo import zoo_models


def test_a_run_with_the_arithmetic_taken_out_records_each_models_phases(tmp_path):
    out = tmp_path / "bench" / "host_cost_cpu.json"
    argv = ["--tasks", "niah_single_1", "--lengths", "1k", "--data-dir", str(tmp_path / "data"),
            "--batch-size", "8", "--end-after", "3", "--work", str(tmp_path / "work"), "--label", "test", "--out", str(out)]
    assert host_cost.main(argv) == 0
    record = json.loads(out.read_text())
    assert record["meta"]["label"] == "test" and record["meta"]["end_after"] == 3
    run = record["run"]
    assert [m["model"] for m in run["models"]] == ["fox", "path", "path_fox", "rope"]  # the study's text models
    assert abs(sum(m["phases"]["requests"] for m in run["models"]) - run["requests_s"]) < 0.01
    # every answer is the stand-in's token three times (prefill and two steps), then the end
    tokenizer = load_tokenizer(zoo_models("path")[0])
    samples = (tmp_path / "work" / "run" / "lm_eval").rglob("samples_*.jsonl")
    responses = [json.loads(line)["resps"] for file in samples for line in file.read_text().splitlines()]
    assert len(responses) == 4 * 64 and all(r == [[tokenizer.decode([5, 5, 5])]] for r in responses)
    lines = host_cost.render_host_cost(tmp_path).splitlines()
    assert "`results/bench/host_cost_cpu.json`" in lines[0] and "rows end after 3 steps" in lines[0]
    assert [line.split(" | ")[0] for line in lines[4:]] == ["| fox", "| path", "| path_fox", "| rope"]
