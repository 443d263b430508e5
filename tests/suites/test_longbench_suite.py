"""The LongBench-E suite end to end from the command line, offline, on a tiny model and the test
fixtures (three datasets whose answers are short, to keep generation cheap on a CPU): records per
dataset and length bucket, sample logs, the Table 7 report; and a missing dataset as one error line."""
import json

from path_eval.models.random_checkpoint import random_model
from path_eval.results import load_records
from tests.helpers import LONGBENCH_LENGTHS, ROOT, assert_missing_data_line, run_cli, write_longbench_e

TASKS = ("2wikimqa", "triviaqa", "passage_count")
BUCKETS = (None, "0-4k", "4-8k", "8k+")


def test_longbench_e_suite_offline(tmp_path):
    random_model("rope", "tiny").save_pretrained(tmp_path / "model")
    data = write_longbench_e(tmp_path / "data", datasets=set(TASKS))
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "longbench_e", "--tasks", ",".join(TASKS), "--model", str(tmp_path / "model"),
                     "--data-dir", str(data), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    records = load_records(out)
    for task in TASKS:
        mine = {r.length_bucket: r for r in records if r.task == task}
        assert sorted(mine, key=str) == sorted([None, "0-4k", "4-8k", "8k+"], key=str), task
        assert [mine[b].n for b in (None, "0-4k", "4-8k", "8k+")] == [3, 1, 1, 1]
        # the fox rule (the suite's): each cell rounded to 2 decimals x100
        assert mine[None].value == round(100 * sum(mine[b].value for b in ("0-4k", "4-8k", "8k+")) / 3, 2) / 100
        assert all(0 <= r.value <= 1 and r.provenance.truncate_middle == 15500 for r in mine.values())
        assert {r.provenance.longbench_rule for r in mine.values()} == {"fox"}
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
    check_rescore(out, records, logged)


def check_rescore(out, records, logged):
    """Rescoring with the run's own rule gives its records exactly. Then, with the logged generations
    replaced by two-line answers, thudm's rule changes only what the rule changes: 2wikimqa and
    passage_count are cut to their first line only under fox, triviaqa under both, and fox rounds."""
    from path_eval.cli import main

    assert main(["rescore", str(out)]) == 0
    assert load_records(out / "rescored-fox") == records
    for task, second_line in (("2wikimqa", "more words"), ("triviaqa", "more words"), ("passage_count", "4 5")):
        log = out / "samples" / "model" / f"{task}.jsonl"
        rows = [json.loads(line) for line in log.open()]
        log.write_text("".join(json.dumps(row | {"response": [f"\n\n{row['doc']['answers'][0]}\n{second_line}"]}) + "\n"
                               for row in rows))
    assert main(["rescore", str(out), "--out", str(out / "fox")]) == 0
    assert main(["rescore", str(out), "--longbench-rule", "thudm", "--out", str(out / "thudm")]) == 0
    assert load_records(out) == records  # the run's own file is untouched
    fox = {(r.task, r.length_bucket): r for r in load_records(out / "fox")}
    thudm = {(r.task, r.length_bucket): r for r in load_records(out / "thudm")}
    # fox: every first line is the answer; thudm: 2wikimqa's answers "Jane Roe", "Oslo", "Film B" with two more
    # words (F1 2/3, 1/2, 2/3), passage_count's number among three numbers (1/3), triviaqa cut as under fox;
    # both rules round each cell x100 to 2 decimals
    assert {k: round(r.value, 4) for k, r in fox.items()} == {(t, b): 1.0 for t in TASKS for b in BUCKETS}
    assert [f"{100 * thudm['2wikimqa', b].value:.2f}" for b in BUCKETS] == ["61.11", "66.67", "50.00", "66.67"]
    assert [f"{100 * thudm['passage_count', b].value:.2f}" for b in BUCKETS] == ["33.33"] * 4
    assert [thudm["triviaqa", b].value for b in BUCKETS] == [1.0] * 4
    assert {r.provenance.longbench_rule for r in thudm.values()} == {"thudm"}
    for key, record in fox.items():  # the rest of each record as it was
        assert thudm[key].model_copy(update={"value": record.value, "stderr": record.stderr,
                                             "provenance": record.provenance}) == record
        assert thudm[key].provenance.model_copy(update={"longbench_rule": "fox"}) == record.provenance
