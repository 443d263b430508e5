"""`eval.py report` and `compare`: the suite layout with the paper's rows where the setting
matches, four output formats, deltas marked beyond noise."""
import json
from pathlib import Path

import pytest

from path_eval.reports.tables import comparison, render, suite_table
from path_eval.suites import load_suite
from tests.reports.records import records

PAPER = Path(__file__).resolve().parents[2] / "results" / "paper"


def test_paper_rows_appear_only_when_the_protocol_matches():
    suite = load_suite("table2")
    header, rows, note = suite_table(records(acc=0.612), suite)
    assert header[:3] == ["model", "PIQA acc", "Wiki ppl word_perplexity"]
    assert rows[0][:2] == ["m", "61.2"] and note is None
    assert [r[0] for r in rows[1:]] == ["RoPE (paper)", "FoX (paper)", "PaTH (paper)", "PaTH-FoX (paper)"]
    assert rows[3][1:3] == ["70.5", "18.03"]  # PaTH: PIQA 70.5, Wiki 18.03 as published
    _, rows, note = suite_table(records(limit=100), suite)
    assert len(rows) == 1 and "limit" in note


@pytest.mark.parametrize("fmt,marker", [("markdown", "| m | 61.2 |"), ("csv", "m,61.2,18.00"),
                                        ("latex", r"m & 61.2 & 18.00 \\")])
def test_formats(fmt, marker):
    header, rows, note = suite_table(records(acc=0.612), load_suite("table2"))
    assert marker in render(header, rows, fmt, "t", note)


def test_deltas_are_marked_only_beyond_noise():
    runs = [("a", records(acc=0.50)), ("b", records(acc=0.51, model="m2")), ("c", records(acc=0.60, model="m3"))]
    header, rows = comparison(runs)
    piqa = next(r for r in rows if r[0] == "piqa")
    assert piqa[-2] == "+1.00" and piqa[-1] == "+10.00 *"
    assert header[-2:] == ["delta b:m2", "delta c:m3"]


def test_published_numbers_are_internally_consistent():
    """Avg columns of the transcribed tables equal the plain means of their parts. Every published
    cell is rounded to 0.05, so the mean of rounded parts and the rounded mean may differ by 0.1."""
    table2 = json.loads((PAPER / "table2.json").read_text())
    parts = ["lambada_openai/acc", "piqa/acc", "hellaswag/acc_norm", "winogrande/acc", "arc_easy/acc",
             "arc_challenge/acc_norm"]
    for row in table2["rows"]:
        assert sum(row[p] for p in parts) / 6 == pytest.approx(row["avg/acc"], abs=0.1)
    table7 = json.loads((PAPER / "table7.json").read_text())
    datasets = [name for name in table7["rows"] if name != "Average"]
    assert len(datasets) == 11
    for bucket in table7["buckets"]:
        for i in range(4):
            mean = sum(table7["rows"][d][bucket][i] for d in datasets) / 11
            assert mean == pytest.approx(table7["rows"]["Average"][bucket][i], abs=0.1)


def test_long_context_suites_put_lengths_in_columns():
    from path_eval.results import Provenance, ResultRecord
    from tests.reports.records import PROVENANCE

    p = Provenance(**PROVENANCE)
    rows = [ResultRecord(suite="ruler", model=m, task=t, length=n, metric=metric, value=v, stderr=None, n=5,
                         higher_is_better=True, provenance=p)
            for m, t, metric, n, v in [("a", "vt", "string_match_all", 4096, 0.5), ("a", "vt", "string_match_all", 8192, 0.25),
                                       ("a", "ruler_11", "score", 4096, 0.4), ("b", "vt", "string_match_all", 8192, 1.0)]]
    header, table, _ = suite_table(rows, load_suite("ruler"))
    assert header == ["model", "task", "@4096", "@8192"]
    assert table == [["a", "vt string_match_all", "50.0", "25.0"],
                     ["a", "RULER without QA (11 tasks) score", "40.0", "-"],
                     ["b", "vt string_match_all", "-", "100.0"]]


def test_table3_layout_joins_suites_by_length_beside_the_paper_rows():
    from path_eval.reports.tables import paper_layout
    from path_eval.results import Provenance, ResultRecord
    from tests.reports.records import PROVENANCE

    p = Provenance(**PROVENANCE)
    measured = [ResultRecord(suite=suite, model="mine", task=task, length=n, metric=metric, value=v, stderr=None,
                             n=5, higher_is_better=True, provenance=p)
                for suite, task, metric, n, v in [("ruler", "ruler_13", "score", 8192, 0.345),
                                                   ("phonebook", "phonebook", "phonebook_exact_match", 2048, 0.9),
                                                   ("ruler", "vt", "string_match_all", 8192, 0.1)]]
    header, rows, note = paper_layout("table3", measured)
    assert header[:4] == ["model", "RULER 4096", "RULER 8192", "RULER 16384"] and len(header) == 14
    assert rows[0] == ["mine", "-", "34.5", "-"] + ["-"] * 4 + ["90.0", "-", "-"] + ["-"] * 3
    paper = json.loads((Path(__file__).resolve().parents[2] / "results/paper/table3.json").read_text())
    path_fox = next(r for r in paper["rows"] if r["variant"] == "path_fox")
    assert rows[4][0] == path_fox["model"] and rows[4][8:11] == ["89.6", "93.8", "66.6"]
    assert "measured here: RULER, PhoneBook" in note and "CAUTION" not in note
    with pytest.raises(Exception, match="no paper layout"):
        paper_layout("table9", measured)
