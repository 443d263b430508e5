"""The import-cost bench: its reading of `-X importtime` against a report whose sums are known, and one
real series on this machine (fresh interpreters importing the model stack)."""
from __future__ import annotations

import json
import os
import py_compile

import pytest

from benchmarks import import_cost

REPORT = """import time: self [us] | cumulative | imported package
import time:       100 |        100 |   _io
import time:     20000 |      20000 |       torch._C
import time:    500000 |     520000 |     torch
import time:      3000 |       3000 |         transformers.utils
import time:     40000 |      43000 |       transformers
import time:      1500 |     564500 | path_eval.lm
some other line a module printed
"""


def test_self_times_are_summed_by_top_level_package():
    assert import_cost.self_seconds_by_package(REPORT) == pytest.approx(
        {"_io": 0.0001, "torch": 0.52, "transformers": 0.043, "path_eval": 0.0015})


def test_one_real_series_of_fresh_interpreters(tmp_path, capsys):
    out = tmp_path / "results" / "bench" / "import_cost_cpu.json"
    assert import_cost.main(["--label", "first", "--repeats", "1", "--out", str(out)]) == 0
    [series] = json.loads(out.read_text())["series"]
    assert series["label"] == "first" and len(series["seconds"]) == 1 and series["median_s"] == series["seconds"][0] > 0
    # the model stack is what the probe imported: torch and lm-eval among its packages
    assert {"torch", "transformers", "lm_eval", "path_eval"} <= set(series["packages"])
    assert series["packages"]["torch"]["modules"] > 100 and series["first_s"] > 0
    assert "first: median" in capsys.readouterr().out
    page = import_cost.render_import_cost(tmp_path / "results")
    assert "`results/bench/import_cost_cpu.json`" in page and "| first |" in page and "| `torch` |" in page


def test_a_second_series_goes_beside_the_first_and_no_label_twice(tmp_path, capsys, monkeypatch):
    def measured(label, repeats, env):
        return {"label": label, "first_s": 2.0, "seconds": [1.0] * repeats, "median_s": 1.0, "importtime_total_s": 1.1,
                "dont_write_bytecode": label == "first", "pythondontwritebytecode": None,
                "packages": {"torch": {"self_s": 0.5, "modules": 10, "cached": 0 if label == "first" else 10}}}

    monkeypatch.setattr(import_cost, "measure_series", measured)
    out = tmp_path / "results" / "bench" / "import_cost_gpu.json"
    assert import_cost.main(["--label", "first", "--out", str(out)]) == 0
    assert import_cost.main(["--label", "second", "--repeats", "2", "--out", str(out)]) == 0
    assert [s["label"] for s in json.loads(out.read_text())["series"]] == ["first", "second"]
    capsys.readouterr()
    assert import_cost.main(["--label", "first", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "labelled 'first' already" in err and err.count("\n") == 1
    assert len(json.loads(out.read_text())["series"]) == 2  # the refused series wrote nothing
    page = import_cost.render_import_cost(tmp_path / "results")
    assert "| first | 2.00 | 1.00 | 1.00, 1.00, 1.00 | no | 1.10 |" in page
    assert "| second | 2.00 | 1.00 | 1.00, 1.00 | yes | 1.10 |" in page
    assert "| `torch` | 0.50 (0/10) | 0.50 (10/10) |" in page


def test_the_import_report_counts_the_modules_compiled_and_not(tmp_path):
    package = tmp_path / "probed_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from probed_pkg import inner\n")
    (package / "inner.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    caches = import_cost.import_report(env, "probed_pkg")
    assert caches["dont_write_bytecode"] is True and caches["packages"]["probed_pkg"] == [2, 0]
    py_compile.compile(str(package / "inner.py"), doraise=True)
    assert import_cost.import_report(env, "probed_pkg")["packages"]["probed_pkg"] == [2, 1]
    written = import_cost.import_report({**env, "PYTHONDONTWRITEBYTECODE": ""}, "probed_pkg")
    assert written["dont_write_bytecode"] is False and written["packages"]["probed_pkg"] == [2, 2]


@pytest.mark.parametrize("content, line", [
    ("{bad", "cannot be read as JSON"),
    ("[1]", "is not a file this bench wrote"),
    (None, "its folder cannot be written"),  # --out under a regular file
])
def test_an_out_this_bench_cannot_use_is_one_line_before_measuring(content, line, tmp_path, capsys):
    if content is None:
        (tmp_path / "file").write_text("mine")
        out = tmp_path / "file" / "x.json"
    else:
        out = tmp_path / "x.json"
        out.write_text(content)
    assert import_cost.main(["--label", "x", "--repeats", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and line in err and err.count("\n") == 1
    assert content is None or out.read_text() == content


def test_another_machines_file_is_refused(tmp_path, capsys):
    out = tmp_path / "import_cost.json"
    out.write_text(json.dumps({"meta": {"machine": "NVIDIA H999", "python": "3.12.3"}, "series": []}))
    assert import_cost.main(["--label", "x", "--repeats", "1", "--out", str(out)]) == 2
    assert "holds series of NVIDIA H999" in capsys.readouterr().err


def test_bad_repeats_is_one_line(tmp_path, capsys):
    assert import_cost.main(["--label", "x", "--repeats", "0", "--out", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err == "error: --repeats 0: give 1 or more\n"
    assert not (tmp_path / "x.json").exists()
