"""The LongBench-E suite end to end from the command line, offline, on a tiny model and the test
fixtures (three datasets whose answers are short, to keep generation cheap on a CPU): records per
dataset and length bucket, sample logs, the Table 7 report; and a missing dataset as one error line."""
import json

from path_eval.bench.random_checkpoint import random_model
from path_eval.results import load_results
from tests.helpers import LONGBENCH_LENGTHS, ROOT, assert_missing_data_line, run_cli, write_longbench_e

TASKS = ("2wikimqa", "triviaqa", "passage_count")


def test_longbench_e_suite_offline(tmp_path):
    random_model("rope", "tiny").save_pretrained(tmp_path / "model")
    data = write_longbench_e(tmp_path / "data", datasets=set(TASKS))
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "longbench_e", "--tasks", ",".join(TASKS), "--model", str(tmp_path / "model"),
                     "--data-dir", str(data), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    records = load_results(out)
    for task in TASKS:
        mine = {r.length_bucket: r for r in records if r.task == task}
        assert sorted(mine, key=str) == sorted([None, "0-4k", "4-8k", "8k+"], key=str), task
        assert [mine[b].n for b in (None, "0-4k", "4-8k", "8k+")] == [3, 1, 1, 1]
        assert mine[None].value == sum(mine[b].value for b in ("0-4k", "4-8k", "8k+")) / 3
        assert all(0 <= r.value <= 1 and r.provenance.truncate_middle == 15500 for r in mine.values())
        assert mine[None].provenance.max_length == 16384
    assert not any(r.task == "longbench_e" for r in records)  # the average needs all 11 datasets
    logged = [json.loads(line) for line in (out / "samples" / "model" / "triviaqa.jsonl").open()]
    assert [row["doc"]["length"] for row in logged] == list(LONGBENCH_LENGTHS)
    assert all(set(row["scores"]) == {"qa_f1_score"} and row["request"][0][1]["until"] == [] for row in logged)
    report = run_cli("report", str(out), "--layout", "table7", "--format", "csv")
    assert report.returncode == 0, report.stderr[-2000:]
    lines = report.stdout.splitlines()
    assert lines[0].split(",")[1:6] == ["0-4k FoX (paper)", "0-4k PaTH-FoX (paper)", "0-4k PaTH (paper)",
                                         "0-4k RoPE (paper)", "0-4k model"]
    triviaqa = next(line.split(",") for line in lines if line.startswith("triviaqa,"))
    measured = {r.length_bucket: r for r in records if r.task == "triviaqa"}
    assert triviaqa[1:5] == ["33.2", "28.9", "36.0", "21.8"]
    assert triviaqa[5] == f"{100 * measured['0-4k'].value:.1f}" and triviaqa[15] == f"{100 * measured['8k+'].value:.1f}"


def test_a_missing_dataset_is_one_line_naming_the_download(tmp_path):
    data = write_longbench_e(tmp_path / "data", datasets={"2wikimqa"})
    assert_missing_data_line("longbench_e", data, "THUDM/LongBench/hotpotqa_e/test.jsonl", tmp_path / "run")


def test_a_suite_without_max_length_is_checked_against_the_checkpoints_context(tmp_path):
    """Without max_length in the suite or on the command line the context is the checkpoint's, known
    only once it loads: truncate_middle plus the new tokens must still fit it (one line, no results)."""
    import yaml

    suite = yaml.safe_load((ROOT / "suites" / "longbench_e.yaml").read_text())
    del suite["max_length"]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    model = random_model("rope", "tiny")
    model.config.max_position_embeddings = 8192  # a context the checkpoint states, too short for 15500
    model.save_pretrained(tmp_path / "model")
    data = write_longbench_e(tmp_path / "data", datasets={"trec"})
    result = run_cli("run", "--suite", str(tmp_path / "suite.yaml"), "--tasks", "trec", "--model",
                     str(tmp_path / "model"), "--data-dir", str(data), "--out", str(tmp_path / "run"))
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = result.stderr.strip().splitlines()
    assert "truncate_middle 15500 + 64 new tokens exceed max_length" in line
    assert not (tmp_path / "run" / "results.json").exists()
