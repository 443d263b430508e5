"""`eval.py report` and `compare`: the suite layout with the paper's rows where the setting
matches, four output formats, deltas marked beyond noise."""
import json
from pathlib import Path

import pytest

from path_eval.reports.tables import comparison, comparison_note, protocol_differences, render, suite_table
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE, records

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


def test_without_per_sample_logs_deltas_are_tested_unpaired():
    """z = delta / hypot(0.01, 0.01): 1 point gives p = erfc(0.707 / sqrt 2) = 0.48, 10 points p < 1e-4."""
    runs = [("a", records(acc=0.50)), ("b", records(acc=0.51, model="m2")), ("c", records(acc=0.60, model="m3"))]
    header, rows = comparison(runs)
    piqa = next(r for r in rows if r[0] == "piqa")
    assert piqa[-4:] == ["+1.00", "unpaired z p=0.48 (no per-sample log)", "+10.00 *",
                         "unpaired z p<0.0001 (no per-sample log)"]
    assert header[-4:] == ["delta b:m2", "test b:m2", "delta c:m3", "test c:m3"]


def test_protocol_differences_compare_rows_not_tasks():
    """Two tasks of one run read different data: no caution; the same task on other data: one."""
    one_run = records()
    assert protocol_differences([("a", one_run)]) == []
    other = [r.model_copy(update={"provenance": r.provenance.model_copy(update={"data_fingerprint": "e"})})
             for r in records(model="m2")]
    assert protocol_differences([("a", one_run), ("b", other)]) == ["data_fingerprint differs between runs (d, e)"]


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
    with pytest.raises(Exception, match="no layout 'table9': choose one of table3, table7, conversion, "
                                        "variants, state_tracking"):
        paper_layout("table9", measured)


def longbench_records(model="mine", **provenance):
    """Bucket records as a LongBench-E run stores them: per dataset and the longbench_e average."""
    from path_eval.results import Provenance, ResultRecord

    p = Provenance(**(PROVENANCE | {"truncate_middle": 15500, "longbench_rule": "fox"} | provenance))
    rows = [("trec", "classification_score", "0-4k", 0.4), ("trec", "classification_score", "8k+", 0.1),
            ("trec", "classification_score", None, 0.25), ("passage_count", "count_score", "0-4k", 0.05),
            ("longbench_e", "score", "0-4k", 0.3), ("longbench_e", "score", "4-8k", 0.2),
            ("longbench_e", "score", "8k+", 0.123)]
    return [ResultRecord(suite="longbench_e", model=model, task=t, length=None, length_bucket=b, metric=m, value=v,
                         stderr=None, n=3, higher_is_better=True, provenance=p) for t, m, b, v in rows]


def test_table7_layout_puts_measured_models_beside_the_paper_variants_per_bucket():
    from path_eval.reports.tables import paper_layout

    header, rows, note = paper_layout("table7", longbench_records())
    assert header[:6] == ["dataset", "0-4k FoX (paper)", "0-4k PaTH-FoX (paper)", "0-4k PaTH (paper)",
                          "0-4k RoPE (paper)", "0-4k mine"] and len(header) == 1 + 3 * 5
    table = {row[0]: row[1:] for row in rows}
    assert [row[0] for row in rows][-3:] == ["repobench-p", "Average", "passage_count"]
    assert table["trec"] == ["35.0", "36.7", "40.0", "23.3", "40.0", "27.5", "26.3", "35.0", "1.2", "-",
                             "20.6", "26.3", "20.0", "0.0", "10.0"]
    assert table["Average"][4::5] == ["30.0", "20.0", "12.3"] and table["Average"][1] == "23.5"
    assert table["passage_count"] == ["-"] * 4 + ["5.0"] + ["-"] * 10
    assert "measured here: mine" in note and "23.4/21.8/16.1 in Table 3" in note and "CAUTION" not in note
    _, _, note = paper_layout("table7", longbench_records(limit=5, truncate_middle=3500))
    assert "CAUTION: the runs used limit=['5']" in note and "truncate_middle=['3500'], the paper 15500" in note


def test_table3_fills_its_longbench_e_column_from_the_bucket_average():
    from path_eval.reports.tables import paper_layout

    header, rows, note = paper_layout("table3", longbench_records())
    assert header[-3:] == ["LongBench-E 0-4k", "LongBench-E 4-8k", "LongBench-E 8k+"]
    assert rows[0][0] == "mine" and rows[0][-3:] == ["30.0", "20.0", "12.3"] and set(rows[0][1:-3]) == {"-"}
    assert rows[-1][-3:] == ["23.4", "21.8", "16.1"]  # PaTH-FoX as Table 3 prints it
    assert "measured here: LongBench-E" in note


def test_longbench_suite_table_has_the_buckets_as_columns():
    header, rows, _ = suite_table(longbench_records(), load_suite("longbench_e"))
    assert header == ["model", "task", "all", "0-4k", "4-8k", "8k+"]  # the suite's order, not the records'
    assert rows[0] == ["mine", "trec classification_score", "25.0", "40.0", "-", "10.0"]
    assert rows[-1] == ["mine", "LongBench-E (11 datasets) score", "-", "30.0", "20.0", "12.3"]


def test_comparison_names_length_zero():
    """BABILong's 0k is length 0: its row says 0, not the blank of a task without lengths."""
    at_zero = [r.model_copy(update={"length": 0}) for r in records()]
    header, rows = comparison([("a", records() + at_zero)])
    assert sorted(row[2] for row in rows if row[0] == "piqa") == ["", "0"]


ZOO = ["rope", "fox", "path", "path_fox", "flipflop_rope", "flipflop_fox", "flipflop_path", "flipflop_path_fox"]


def zoo_runs():
    """Two runs of the whole zoo: model i scores 50 + i in the first run and 50 + 2i in the second;
    the second run lacks flipflop_path_fox."""
    first = [r for i, m in enumerate(ZOO) for r in records(acc=0.50 + 0.01 * i, model=m)]
    second = [r for i, m in enumerate(ZOO[:-1]) for r in records(acc=0.50 + 0.02 * i, model=m)]
    return [("ruler", first), ("ruler-long", second)]


def test_compare_pairs_each_model_with_itself_in_the_other_run():
    """Model i's delta is its own change, i points (not its value minus the first model's); a model
    one run lacks has a row without delta, and the note names it."""
    runs = zoo_runs()
    header, rows = comparison(runs)
    assert header == ["model", "task", "metric", "length", "ruler", "ruler-long", "delta", "test"]
    piqa = [row for row in rows if row[1] == "piqa"]
    assert [row[0] for row in piqa] == ZOO
    for i, row in enumerate(piqa[:-1]):
        assert row[4:7] == [f"{50 + i:.1f}", f"{50 + 2 * i:.1f}", f"{i:+.2f}" + (" *" if i >= 3 else "")], row  # z = i / hypot(1, 1)
    assert piqa[-1][4:] == ["57.0", "-", "-", "-"]
    assert comparison_note(rows, runs).endswith("ruler-long holds no flipflop_path_fox: no delta for them")


@pytest.mark.parametrize("width", [100, 200])
def test_compare_of_two_zoo_runs_fits_the_terminal_uncut(tmp_path, width, capsys, monkeypatch):
    """`eval.py compare` prints every cell whole (no "…") within the terminal's width."""
    from path_eval.cli import main
    from path_eval.results import write_results

    for label, recs in zoo_runs():
        (tmp_path / label).mkdir()
        write_results(recs, tmp_path / label / "results.json")
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["compare", str(tmp_path / "ruler"), str(tmp_path / "ruler-long")]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and max(map(len, out.splitlines())) <= width
    assert "flipflop_path_fox" in out and "unpaired z p=0.16" in out.replace("\n", " ")


def test_a_terminal_tables_note_runs_the_terminals_width_and_is_escaped():
    """Under a one-column table the note is a paragraph as wide as the terminal, not the table's
    caption wrapped to a few words a line; text from a stored run in it is made printable."""
    from path_eval.terminal import console

    note = "CAUTION, settings that differ: " + "word " * 30 + "\x1b[2J"
    out = console(width=100, record=True, file=open("/dev/null", "w"))
    out.print(render(["model", "x"], [["m", "1.0"]], "terminal", "t", note))
    text = out.export_text()
    lines = [line for line in text.splitlines() if "word" in line]
    assert len(lines) == 2 and len(lines[0]) > 80
    assert "\\x1b[2J" in text and "\x1b" not in text
