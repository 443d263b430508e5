"""The Python API: docs/python-api.md's study block, run exactly as the doc shows it (two zoo models,
two small suites, offline), in under ten lines; `eval.py report` over the same run folders gives the
same tables, plots and page (the command line is a layer over the API); `import path_eval` stays cheap."""
import re
import subprocess
import sys

import pytest

from path_eval.cli import main
from path_eval.errors import PathEvalError
from tests.helpers import ROOT

DOC = ROOT / "docs" / "python-api.md"


def study_block() -> str:
    """The first Python block of the doc's "A study in a notebook" section."""
    section = DOC.read_text().split("## A study in a notebook", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebook")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("PATH_EVAL_CACHE", str(folder / "cache"))
        namespace = {}
        exec(compile(study_block(), str(DOC), "exec"), namespace)
    return folder, namespace


def test_the_doc_block_is_a_study_in_under_ten_lines():
    code = [line for line in study_block().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(code) < 10


def test_the_doc_study_runs_and_reports(study):
    folder, namespace = study
    results = namespace["study"]
    assert set(results.suites) == {"ruler", "phonebook"}
    frame = namespace["frame"]
    assert len(frame) == len(results.records) == 8  # 2 suites x 2 models x 2 lengths
    assert set(frame["model"]) == {"rope", "path"} and set(frame["length"]) == {512, 1024}
    assert set(frame["provenance.dtype"]) == {"float32"}
    phonebook = frame[frame["suite"] == "phonebook"]
    assert set(phonebook["seeds"]) == {3}  # PhoneBook's three seeds, their spread in seed_std
    page = (folder / "study.html").read_text()
    assert page.count("<h3>Run ") == 2 and page.count("what ran") == 2  # each run's protocol, from its plan
    for name in ("ruler", "phonebook"):
        assert (folder / "runs" / name / "results.json").is_file()
        assert (folder / "plots" / f"{name}.png").is_file()
        svg = (folder / "plots" / f"{name}.svg").read_text()
        assert svg[svg.index("<svg"):] in page


def test_the_docs_sentence_on_the_scores_is_the_runs(study):
    """The doc says what the block's run scores, per suite and model, at both lengths."""
    assert ("both models score 100 on NIAH and 0 on PhoneBook"
            in " ".join(DOC.read_text().split()))
    scores = {}
    for record in study[1]["study"].records:
        scores.setdefault((record.suite, record.model), set()).add(round(100 * record.value))
    assert scores == {("ruler", "rope"): {100}, ("ruler", "path"): {100}, ("phonebook", "path"): {0},
                      ("phonebook", "rope"): {0}}


def test_the_command_line_reports_the_same_study(study, capsys, monkeypatch):
    folder, namespace = study
    monkeypatch.chdir(folder)
    capsys.readouterr()
    assert main(["report", "runs/ruler", "runs/phonebook", "--format", "markdown", "--plot", "cli-plots",
                 "--html", "cli.html"]) == 0
    assert capsys.readouterr().out == namespace["study"].report(format="markdown")
    for file in (folder / "plots").iterdir():
        assert (folder / "cli-plots" / file.name).read_bytes() == file.read_bytes()
    assert (folder / "cli.html").read_bytes() == (folder / "study.html").read_bytes()


def test_loading_the_stored_runs_gives_the_same_records(study):
    import path_eval

    folder, namespace = study
    loaded = path_eval.load_results(folder / "runs" / "ruler", folder / "runs" / "phonebook")
    assert loaded.records == namespace["study"].records
    assert [run.plan for run in loaded.runs] == [run.plan for run in namespace["study"].runs]


def test_import_path_eval_stays_cheap():
    heavy = ("torch", "lm_eval", "transformers", "matplotlib", "pandas", "datasets")
    code = f"import sys, path_eval; path_eval.evaluate; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_bad_arguments_are_one_clear_error():
    import path_eval
    from path_eval.errors import PathEvalError

    with pytest.raises(PathEvalError, match="unknown suite 'rulr'"):
        path_eval.evaluate("rulr", ["zoo:rope"])
    with pytest.raises(PathEvalError, match="tasks=\\[\\] names nothing"):
        path_eval.evaluate("ruler", ["zoo:rope"], tasks=[])
    with pytest.raises(PathEvalError, match="names no run"):
        path_eval.load_results()


def test_evaluate_takes_a_longbench_rule_and_names_a_wrong_one(tmp_path):
    """The API's rule is the command line's --longbench-rule: a rule the suite lacks is one error,
    before any model loads."""
    import path_eval

    with pytest.raises(PathEvalError, match="suite longbench_e has no LongBench rule 'fx': choose one of"):
        path_eval.evaluate("longbench_e", [str(tmp_path / "no-model")], longbench_rule="fx", out=tmp_path / "run")
