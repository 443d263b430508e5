"""Reports read the suite a run stored (OUT/suite.json), not the suites folder: a run of a copied,
renamed suite is reportable, comparable and checkable; old runs fall back to the built-in suite."""
import json
import shutil

import pytest
import yaml

from path_eval.models.random_checkpoint import random_model
from path_eval.cli import main
from path_eval.plan import ResolvedPlan
from path_eval.results import load_records
from path_eval.package_data import builtin_suites
from path_eval.suites import load_suite
from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # one short RULER run on a tiny model


@pytest.fixture(scope="module")
def copied_run(tmp_path_factory):
    """suites/ruler.yaml copied as my_ruler (one task relabelled), run on a tiny model."""
    root = tmp_path_factory.mktemp("copied")
    raw = yaml.safe_load((builtin_suites() / "ruler.yaml").read_text())
    raw["name"] = "my_ruler"
    raw["tasks"][0]["label"] = "My single NIAH"
    suite = root / "my_ruler.yaml"
    suite.write_text(yaml.safe_dump(raw))
    random_model("path", "tiny", seed=3).save_pretrained(root / "model")
    (root / "data").mkdir()
    out = root / "out"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH_EVAL_CACHE", str(root / "cache"))
        assert main(["run", "--suite", str(suite), "--model", str(root / "model"), "--tasks", "niah_single_1",
                     "--lengths", "1k", "--limit", "2", "--data-dir", str(root / "data"), "--out", str(out),
                     "--quiet", "--bootstrap-iters", "0"]) == 0
    return out


def test_the_run_stores_its_plan_and_suite(copied_run):
    suite = load_suite(str(copied_run.parent / "my_ruler.yaml"))
    assert json.loads((copied_run / "suite.json").read_text()) == json.loads(suite.model_dump_json())
    plan = ResolvedPlan.model_validate_json((copied_run / "plan.json").read_text())
    assert plan.suite == suite and [m.name for m in plan.models] == ["model"]
    [item] = plan.items
    assert (item.task, item.kind, item.length, item.seeds, item.samples) == ("niah_single_1", "generated", 1024,
                                                                             [1234], 2)
    assert item.lm_eval_tasks == ["niah_single_1_1024_s1234"] and plan.models[0].max_length == 1025
    assert {r.suite for r in load_records(copied_run)} == {"my_ruler"}


def test_a_copied_suite_is_reported_with_its_own_labels(copied_run, capsys):
    assert main(["report", str(copied_run), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "my_ruler: RULER" in out and "My single NIAH string_match_all" in out


def test_a_copied_suite_is_compared_and_checked(copied_run, capsys):
    assert main(["compare", str(copied_run), str(copied_run / "results.json"), "--format", "csv"]) == 0
    assert "niah_single_1,string_match_all,1024" in capsys.readouterr().out
    assert main(["check", str(copied_run), "--baseline", str(copied_run / "results.json")]) == 0
    assert "0 of 1 metrics regressed" in capsys.readouterr().out


def test_results_without_their_suite_are_one_line(copied_run, tmp_path, capsys):
    shutil.copy(copied_run / "results.json", tmp_path / "results.json")
    assert main(["report", str(tmp_path / "results.json")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and "suite 'my_ruler'" in line and "suite.json" in line


def test_old_runs_without_suite_json_use_the_built_in_suite(copied_run, tmp_path, capsys):
    records = json.loads((copied_run / "results.json").read_text())
    (tmp_path / "results.json").write_text(json.dumps([r | {"suite": "ruler"} for r in records]))
    assert main(["report", str(tmp_path), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "ruler: RULER" in out and "niah_single_1 string_match_all" in out and "My single" not in out


RUN_FOLDERS = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "results").rglob("suite.json"))


def test_every_committed_run_folder_is_found():
    """The test below reads every run folder under results/; were the glob to miss them (as one over
    results/zoo/study/* did once the study moved under gpu/), it would be skipped, not fail."""
    from training.study import STATE_TRACKING_RUNS, study_parts

    expected = {f"results/state_tracking/{part}" for part in STATE_TRACKING_RUNS}
    expected |= {str(folder.relative_to(ROOT)) for folder in study_parts(ROOT / "results").values()}
    assert len(expected) >= 13 and expected <= set(RUN_FOLDERS)


@pytest.mark.parametrize("run", RUN_FOLDERS)
def test_older_run_folders_suite_json_load_as_written(run):
    """Committed run folders store every built-in kind's key, null but the task's own: each task reads
    as the kind of its one non-null key, with those options, and writing it again loses nothing."""
    from path_eval.kinds import KINDS
    from path_eval.suites import SuiteSpec

    folder = ROOT / run
    stored = json.loads((folder / "suite.json").read_text())
    suite = SuiteSpec.model_validate(stored)
    for raw, task in zip(stored["tasks"], suite.tasks):
        [key] = [kind.key for kind in KINDS.values() if raw.get(kind.key) is not None]
        assert KINDS[task.kind].key == key
        options = task.options if isinstance(task.options, str) else task.options.model_dump(mode="json")
        assert options == raw[key]
    assert SuiteSpec.model_validate(json.loads(suite.model_dump_json())) == suite
    plan = ResolvedPlan.model_validate(json.loads((folder / "plan.json").read_text()))
    assert plan.suite == suite
