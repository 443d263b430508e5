"""LongBench-E cells under the two scoring rules, against the originals' expressions written out
here. THUDM's and the FoX repository's eval.py round every dataset cell alike, x100 to 2 decimals,
before any average: a length-bucket cell (`scorer_e`) is `round(100 * np.mean(scores), 2)` over the
bucket's scores in document order (numpy's pairwise sum, numpy's round of the float64 it gives), a
whole-dataset cell (`scorer`) `round(100 * total / n, 2)` with `total` summed one score at a time.
At a tie the second decimal depends on those details: the score lists below are ties on which
`round(100 * sum(scores) / n, 2)` prints another number."""
import functools
import random

import numpy as np
import pytest

from path_eval.evaluators import TaskResult
from path_eval.metrics.longbench import length_bucket_cell
from path_eval.reports.tables import paper_layout
from path_eval.results.records import aggregate, task_records
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE

DATASETS = ("2wikimqa", "hotpotqa", "multifieldqa_en", "qasper", "multi_news", "gov_report", "trec", "triviaqa",
            "samsum", "lcc", "repobench-p")
METRIC = {"multi_news": "rouge_score", "gov_report": "rouge_score", "samsum": "rouge_score",
          "trec": "classification_score", "lcc": "code_sim_score", "repobench-p": "code_sim_score"}
RULES = ("fox", "thudm")
INFO = {k: v for k, v in PROVENANCE.items() if k not in ("data_fingerprint", "data_files", "num_fewshot")}


def scorer_e_cell(scores: list[float]) -> float:
    """THUDM's and FoX's eval.py, `scorer_e`: a length bucket's cell."""
    return round(100 * np.mean(scores), 2)


def scorer_cell(scores: list[float]) -> float:
    """THUDM's and FoX's eval.py, `scorer`: a whole dataset's cell."""
    total_score = 0.
    for score in scores:
        total_score += score
    return round(100 * total_score / len(scores), 2)


def plain_cell(scores: list[float]) -> float:
    return round(100 * sum(scores) / len(scores), 2)


@functools.cache
def suite_under(rule: str):
    return load_suite("longbench_e").with_longbench_rule(rule)


def lcc_cells(rule: str, scores: list[float], length: int, shuffle: random.Random | None = None) -> dict:
    """The records (by length bucket) of lcc whose samples, doc_id 0, 1, ..., score `scores`, every doc
    `length` words long; the samples handed over in an order `shuffle` draws (a data-parallel run
    gathers them rank by rank)."""
    suite = suite_under(rule)
    samples = [{"doc_id": i, "doc": {"length": length}, "code_sim_score": s} for i, s in enumerate(scores)]
    if shuffle:
        shuffle.shuffle(samples)
    result = TaskResult(task="lcc", length=None, metrics={"code_sim_score": [(sum(scores) / len(scores), None)]},
                        n=len(scores), data_files=[], data_fingerprint=None, truncate_middle=15500,
                        protocol={"longbench_rule": rule}, samples=samples)
    return {r.length_bucket: r for r in task_records(suite, "m", [result], INFO)}


def printed(record) -> str:
    """The record's value as the originals print a cell: x100, 2 decimals."""
    return f"{100 * record.value:.2f}"


@pytest.mark.parametrize("rule", RULES)
def test_a_hand_made_tie_prints_as_each_original_expression(rule):
    # 8 scores whose exact mean is 30.625 %: np.mean's float64 lies above the tie, the running sum's below
    scores = [0.4, 0.3, 0.25, 0.25, 0.25, 0.1, 0.5, 0.4]
    assert (scorer_e_cell(scores), scorer_cell(scores), plain_cell(scores)) == (30.63, 30.62, 30.62)
    cells = lcc_cells(rule, scores, 100)
    assert printed(cells["0-4k"]) == "30.63" and printed(cells[None]) == "30.62"
    assert cells["0-4k"].n == cells[None].n == 8


@pytest.mark.parametrize("rule", RULES)
def test_200_sample_ties_print_as_the_originals_in_document_order(rule):
    """Seeded lcc-like buckets of 200 code_sim scores (k / 100) whose sum sits on a tie of the
    second decimal (an odd sum of ratios: x100, 48.315, 49.755, ...), handed over out of order: every cell equals the
    originals' expressions over the scores in document order, including where a plain sum / n, or
    np.mean over the order handed over, prints another number."""
    rng = random.Random(20240611)
    differs = {"plain sum, bucket": 0, "plain sum, all samples": 0, "order handed over": 0}
    for _ in range(200):
        ratios = [rng.randrange(101) for _ in range(200)]
        if sum(ratios) % 2 == 0:  # an odd sum of ratios / 200 ends in 5 at the third decimal
            ratios[-1] += 1 if ratios[-1] < 100 else -1
        scores = [r / 100 for r in ratios]
        shuffle = random.Random(rng.random())
        cells = lcc_cells(rule, scores, 9000, shuffle)
        assert printed(cells["8k+"]) == f"{scorer_e_cell(scores):.2f}"
        assert printed(cells[None]) == f"{scorer_cell(scores):.2f}"
        assert cells["8k+"].n == cells[None].n == 200 and set(cells) == {None, "8k+"}
        handed_over = [scores[i] for i in range(200)]
        random.Random(0).shuffle(handed_over)
        differs["plain sum, bucket"] += scorer_e_cell(scores) != plain_cell(scores)
        differs["plain sum, all samples"] += scorer_cell(scores) != round(100 * (sum(scores) / 200), 2)
        differs["order handed over"] += scorer_e_cell(scores) != scorer_e_cell(handed_over)
    assert all(count >= 1 for count in differs.values()), differs


def test_a_cell_kept_as_a_fraction_prints_back_as_the_original_number():
    """Records keep cells as fractions: x100 every one of 0.00 ... 100.00 prints as the original's
    cell at 2 decimals and rounds back to it (x100 is not always the same float: 0.23 / 100 * 100 is
    0.22999999999999998)."""
    for k in range(10001):
        original = scorer_e_cell([k / 10000])
        fraction = length_bucket_cell([k / 10000], 2)
        assert f"{100 * fraction:.2f}" == f"{original:.2f}" and round(100 * fraction, 2) == original, k


def bucket_records(rule: str, cell_of):
    """Every dataset with two 0-4k samples whose scores average to cell_of(dataset), under `rule`."""
    suite = load_suite("longbench_e").with_longbench_rule(rule)
    results = []
    for dataset in DATASETS:
        metric = METRIC.get(dataset, "qa_f1_score")
        scores = [2 * cell_of(dataset), 0.0]
        samples = [{"doc": {"length": 100}, metric: s} for s in scores]
        results.append(TaskResult(task=dataset, length=None, metrics={metric: [(sum(scores) / 2, None)]}, n=2,
                                  data_files=[], data_fingerprint=None, truncate_middle=15500, protocol={"longbench_rule": rule},
                                  samples=samples))
    records = task_records(suite, "m", results, INFO)
    return records + aggregate(suite, records)


@pytest.mark.parametrize("rule", RULES)
def test_both_rules_round_each_cell_before_the_average(rule):
    # 0.0496 % rounds to 0.05 % and then shows as 0.1 in the paper's one decimal; unrounded it would show
    # 0.0: the order of the two roundings decides the printed cell.
    cells = {d: 0.000496 for d in DATASETS} | {"trec": 1 / 3}
    records = {(r.task, r.length_bucket): r for r in bucket_records(rule, cells.get)}
    assert printed(records["qasper", "0-4k"]) == printed(records["qasper", None]) == "0.05"  # all samples too
    assert printed(records["trec", "0-4k"]) == "33.33"
    # the bucket average: a plain mean of the rounded cells
    assert records["longbench_e", "0-4k"].value == pytest.approx((10 * 0.0005 + 0.3333) / 11, abs=1e-15)
    assert {r.provenance.longbench_rule for r in records.values()} == {rule}
    header, rows, note = paper_layout("table7", list(records.values()))
    assert next(row for row in rows if row[0] == "qasper")[header.index("0-4k m")] == "0.1"
    assert ("CAUTION: the runs used longbench_rule=['thudm'], the paper fox" in note) == (rule == "thudm")
    assert ("CAUTION" in note) == (rule == "thudm")


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
