"""The BABILong suite end to end from the command line, offline, on a tiny model and the test fixtures:
records per task and length, the qa1-qa5 mean per length, sample logs whose scores follow from the
generations, Table 3's BABILong cells filled from it; and a missing length's file as one error line."""
import json

import pytest

from path_eval.models.random_checkpoint import random_model
from path_eval.metrics.babilong import babilong_accuracy, target_substring
from path_eval.results import load_records
from tests.helpers import assert_missing_data_line, run_cli, write_babilong

TASKS = ("qa1", "qa2", "qa3", "qa4", "qa5")


def test_babilong_suite_offline_fills_table3(tmp_path):
    random_model("rope", "tiny").save_pretrained(tmp_path / "model")
    data = write_babilong(tmp_path / "data")
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "babilong", "--lengths", "0k,4k", "--model", str(tmp_path / "model"),
                     "--data-dir", str(data), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    records = load_records(out)
    for length in (0, 4096):
        parts = []
        for task in TASKS:
            mine = {r.metric: r for r in records if r.task == task and r.length == length}
            assert set(mine) == {"babilong_accuracy", "target_substring"} and mine["babilong_accuracy"].n == 2
            logged = [json.loads(line) for line in (out / "samples" / "model" / f"{task}_{length}.jsonl").open()]
            for row in logged:  # each score is the metric of the logged generation
                doc, generated = row["doc"], row["response"][0]
                expected = {m.__name__: m(generated, doc["target"], doc["question"], task)
                            for m in (babilong_accuracy, target_substring)}
                assert row["scores"] == expected
            assert mine["babilong_accuracy"].value == pytest.approx(
                sum(r["scores"]["babilong_accuracy"] for r in logged) / 2)
            assert mine["babilong_accuracy"].provenance.max_length == 32768
            parts.append(mine["babilong_accuracy"].value)
        [average] = [r for r in records if r.task == "babilong" and r.length == length]
        assert average.metric == "score" and average.value == pytest.approx(sum(parts) / 5) and average.n == 10
    report = run_cli("report", str(out), "--layout", "table3", "--format", "csv")
    assert report.returncode == 0, report.stderr[-2000:]
    lines = report.stdout.splitlines()
    header = lines[0].split(",")
    row = dict(zip(header, next(line for line in lines[1:] if line.startswith("model,")).split(",")))
    babilong = {r.length: r.value for r in records if r.task == "babilong"}
    assert row["BABILong 0"] == f"{100 * babilong[0]:.1f}" and row["BABILong 4096"] == f"{100 * babilong[4096]:.1f}"
    assert row["BABILong 8192"] == row["BABILong 16384"] == row["RULER 4096"] == "-"
    paper = dict(zip(header, next(line for line in lines if line.startswith("PaTH (paper),")).split(",")))
    assert [paper[f"BABILong {n}"] for n in (0, 4096, 8192, 16384)] == ["33.8", "24.6", "16.8", "11.6"]


def test_a_missing_length_is_one_line_naming_the_download(tmp_path):
    data = write_babilong(tmp_path / "data", lengths=("0k", "4k"))
    assert_missing_data_line("babilong", data, "RMT-team/babilong-1k-samples/8k/qa1.jsonl", tmp_path / "run")
