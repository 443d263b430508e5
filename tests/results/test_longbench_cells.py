"""LongBench-E cells under the two scoring rules: fox rounds each dataset cell (x100) to 2 decimals
as the FoX repository's eval.py does (Python's round: half to even on the binary value), before the
bucket average; thudm rounds nothing. Values are hand-computed."""
import pytest

from path_eval.evaluators import TaskResult
from path_eval.metrics.longbench import rounded_cell
from path_eval.reports.tables import paper_layout
from path_eval.results.records import aggregate, task_records
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE

DATASETS = ("2wikimqa", "hotpotqa", "multifieldqa_en", "qasper", "multi_news", "gov_report", "trec", "triviaqa",
            "samsum", "lcc", "repobench-p")
METRIC = {"multi_news": "rouge_score", "gov_report": "rouge_score", "samsum": "rouge_score",
          "trec": "classification_score", "lcc": "code_sim_score", "repobench-p": "code_sim_score"}


@pytest.mark.parametrize("value, decimals, cell", [
    (1 / 3, 2, 0.3333),      # 33.333... -> 33.33
    (1 / 32, 2, 0.0312),     # 3.125 exactly: half to even -> 3.12 (half up would give 3.13)
    (3 / 32, 2, 0.0938),     # 9.375 exactly: half to even -> 9.38
    (1 / 3, None, 1 / 3),    # thudm: as is
])
def test_rounded_cell(value, decimals, cell):
    assert rounded_cell(value, decimals) == pytest.approx(cell, abs=1e-15)


def bucket_records(rule: str, cell_of):
    """Every dataset with two 0-4k samples whose scores average to cell_of(dataset), under `rule`."""
    suite = load_suite("longbench_e").with_longbench_rule(rule)
    info = {k: v for k, v in PROVENANCE.items() if k not in ("data_fingerprint", "data_files", "num_fewshot")}
    results = []
    for dataset in DATASETS:
        metric = METRIC.get(dataset, "qa_f1_score")
        scores = [2 * cell_of(dataset), 0.0]
        samples = [{"doc": {"length": 100}, metric: s} for s in scores]
        results.append(TaskResult(task=dataset, length=None, metrics={metric: [(sum(scores) / 2, None)]}, n=2,
                                  data_files=[], data_fingerprint=None, truncate_middle=15500, protocol={"longbench_rule": rule},
                                  samples=samples))
    records = task_records(suite, "m", results, info)
    return records + aggregate(suite, records)


def test_fox_rounds_each_cell_before_the_average_and_thudm_rounds_nothing():
    # 0.0496 % rounds to 0.05 % and then shows as 0.1 in the paper's one decimal; unrounded it shows 0.0:
    # the order of the two roundings decides the printed cell.
    cells = {d: 0.000496 for d in DATASETS} | {"trec": 1 / 3}
    fox = {(r.task, r.length_bucket): r for r in bucket_records("fox", cells.get)}
    thudm = {(r.task, r.length_bucket): r for r in bucket_records("thudm", cells.get)}
    assert fox["qasper", "0-4k"].value == pytest.approx(0.0005, abs=1e-15)
    assert fox["qasper", None].value == pytest.approx(0.0005, abs=1e-15)  # the all-samples cell too
    assert thudm["qasper", "0-4k"].value == pytest.approx(0.000496, abs=1e-15)
    assert fox["trec", "0-4k"].value == pytest.approx(0.3333, abs=1e-15)
    # the bucket average: a plain mean of the rounded cells
    assert fox["longbench_e", "0-4k"].value == pytest.approx((10 * 0.0005 + 0.3333) / 11, abs=1e-15)
    assert thudm["longbench_e", "0-4k"].value == pytest.approx((10 * 0.000496 + 1 / 3) / 11, abs=1e-15)
    assert {r.provenance.longbench_rule for r in fox.values()} == {"fox"}
    header, rows, note = paper_layout("table7", list(fox.values()))
    qasper = next(row for row in rows if row[0] == "qasper")
    assert qasper[header.index("0-4k m")] == "0.1" and "CAUTION" not in note
    header, rows, note = paper_layout("table7", list(thudm.values()))
    assert next(row for row in rows if row[0] == "qasper")[header.index("0-4k m")] == "0.0"
    assert "CAUTION: the runs used longbench_rule=['thudm'], the paper fox" in note


def test_table3_names_a_longbench_rule_that_is_not_the_papers():
    thudm = bucket_records("thudm", lambda d: 0.25)
    header, rows, note = paper_layout("table3", thudm)
    assert rows[0][header.index("LongBench-E 0-4k")] == "25.0"
    assert "CAUTION (LongBench-E): the runs used longbench_rule=['thudm'], the paper fox" in note
    assert "CAUTION" not in paper_layout("table3", bucket_records("fox", lambda d: 0.25))[2]


def test_a_stored_suite_marking_first_line_per_task_reads_as_thudms_rule(tmp_path):
    """The suite.json of a run folder written before rules existed marks `first_line: true` on trec,
    triviaqa and samsum: it still loads (reports and rescore read it), as a rule cutting just those."""
    import json

    from path_eval.reports.stored import stored_suite

    raw = json.loads(load_suite("longbench_e").model_dump_json(exclude={"longbench_rules", "longbench_rule"}))
    for task in raw["tasks"]:
        if task["name"] in ("trec", "triviaqa", "samsum"):
            task["first_line"] = True
    (tmp_path / "suite.json").write_text(json.dumps(raw))
    suite = stored_suite(tmp_path, "longbench_e")
    assert suite.longbench_rule == "thudm"
    assert suite.scoring_rule() == load_suite("longbench_e").longbench_rules["thudm"]
