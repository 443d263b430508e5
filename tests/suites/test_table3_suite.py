"""suites/table3.yaml: the paper's Table 3 in one suite, made of the ruler, babilong, phonebook and
longbench_e suites by `include`; a tiny model's short run of two of its tasks reported in the table3
and table7 layouts; and the include rules (settings carried over, conflicts, cycles) on small suites."""
import pytest

from path_eval.models.random_checkpoint import random_model
from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.suites import load_suite
from tests.helpers import fixture_data, write_longbench_e


def test_table3_holds_each_suite_at_the_papers_settings():
    table3 = load_suite("table3")
    parts = {name: load_suite(name) for name in ("ruler", "babilong", "phonebook", "longbench_e")}
    assert [t.name for t in table3.tasks] == [t.name for p in parts.values() for t in p.tasks]
    assert [a.name for a in table3.aggregates] == [a.name for p in parts.values() for a in p.aggregates]
    lengths = {t.name: t.lengths for t in table3.tasks}
    assert lengths["niah_single_1"] == lengths["qa_2"] == [4096, 8192, 16384]
    assert lengths["qa1"] == [0, 4096, 8192, 16384] and lengths["phonebook"] == [2048, 4096, 8192]
    assert lengths["trec"] == [] and table3.task("niah_single_1").samples == 500
    assert table3.task("phonebook").samples == 100 and table3.task("phonebook").seeds == 3
    assert table3.task("qa1").data == parts["babilong"].task("qa1").data  # BABILong as its own suite has it
    assert table3.truncate_middle == 15500 and table3.longbench_rule == "fox" and table3.max_length == 32768
    assert table3.length_buckets.tasks == [t.name for t in parts["longbench_e"].tasks]
    assert table3.length_buckets.applies_to("trec") and not table3.length_buckets.applies_to("qa1")


@pytest.mark.slow  # a short run; the layouts are covered on records in tests/reports and tests/results
def test_a_tiny_models_short_run_renders_in_the_table3_and_table7_layouts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    random_model("path", "tiny", seed=0).save_pretrained(tmp_path / "model")
    data = write_longbench_e(fixture_data(tmp_path / "data", "paul_graham_essays"), datasets={"trec"})
    out = tmp_path / "run"
    assert main(["run", "--suite", "table3", "--tasks", "phonebook,trec", "--lengths", "2k", "--limit", "1",
                 "--model", str(tmp_path / "model"), "--data-dir", str(data), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--layout", "table3", "--format", "markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, measured = ([cell.strip() for cell in line.strip("|").split("|")] for line in (lines[2], lines[4]))
    assert measured[0] == "model" and measured[header.index("PhoneBook 2048")] != "-"
    assert measured[header.index("PhoneBook 4096")] == "-" and measured[header.index("LongBench-E 0-4k")] == "-"
    assert "measured here: PhoneBook" in lines[-1]
    assert main(["report", str(out), "--layout", "table7", "--format", "csv"]) == 0
    trec = next(line.split(",") for line in capsys.readouterr().out.splitlines() if line.startswith("trec,"))
    assert trec[5] != "-" and trec[10] == "-"  # one doc (--limit 1): the 0-4k bucket only


def write_suite(folder, name, body):
    (folder / f"{name}.yaml").write_text(f"name: {name}\ndescription: d\n{body}")
    return str(folder / f"{name}.yaml")


TASK = "tasks:\n  - {name: %s, generator: phonebook, metrics: [phonebook_exact_match]}\n"


def test_include_carries_settings_and_settles_conflicts_in_the_including_suite(tmp_path):
    a = write_suite(tmp_path, "a", "lengths: [1k]\nsamples: 7\nmax_length: 2000\n" + TASK % "pa")
    b = write_suite(tmp_path, "b", "lengths: [2k]\nmax_length: 3000\n" + TASK % "pb")
    with pytest.raises(PathEvalError, match="set max_length differently .*: set max_length in both.yaml"):
        load_suite(write_suite(tmp_path, "both", f"include: [{a}, {b}]\n"))
    both = load_suite(write_suite(tmp_path, "both", f"include: [{a}, {b}]\nmax_length: 4000\n"))
    assert [(t.name, t.lengths, t.samples) for t in both.tasks] == [("pa", [1024], 7), ("pb", [2048], 500)]
    assert both.max_length == 4000
    assert load_suite(write_suite(tmp_path, "one", f"include: [{a}]\n")).max_length == 2000
    write_suite(tmp_path, "loop", f"include: [{tmp_path / 'loop.yaml'}]\n" + TASK % "p")
    with pytest.raises(PathEvalError, match="includes itself"):
        load_suite(str(tmp_path / "loop.yaml"))
