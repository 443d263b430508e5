"""`eval.py rescore` on bad input: one error line naming the problem and the fix, exit code 2, no
file written. (Rescoring itself: tests/suites/test_longbench_suite.py, on a real run's logs.)"""

from path_eval.cli import main
from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan
from path_eval.results import Provenance, ResultRecord, write_results
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE


def run_folder(tmp_path, suite="longbench_e", task="trec", metric="classification_score"):
    """A run folder as `eval.py run` leaves it, without its samples/ logs."""
    out = tmp_path / "run"
    plan = ResolvedPlan(suite=load_suite(suite), models=[PlannedModel(path=tmp_path, name="m", source=str(tmp_path), max_length=16384)],
                        items=[PlannedItem(task=task, kind="lm_eval", length=None, models=["m"])],
                        data_dir=tmp_path)
    out.mkdir()
    (out / "plan.json").write_text(plan.model_dump_json())
    record = ResultRecord(suite=suite, model="m", task=task, length=None, metric=metric, value=0.5, stderr=None,
                          n=2, higher_is_better=True, provenance=Provenance(**PROVENANCE))
    write_results([record], out / "results.json")
    return out


def error_line(capsys, *args) -> str:
    assert main(["rescore", *map(str, args)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


def test_no_such_run(tmp_path, capsys):
    assert "no run folder" in error_line(capsys, tmp_path / "nowhere")


def test_a_folder_without_a_plan(tmp_path, capsys):
    out = run_folder(tmp_path)
    (out / "plan.json").unlink()
    assert "holds no plan.json" in error_line(capsys, out)


def test_no_samples_stored(tmp_path, capsys):
    out = run_folder(tmp_path)
    line = error_line(capsys, out)
    assert "no per-sample log" in line and "samples/m/trec.jsonl" in line
    assert not (out / "rescored-fox").exists()


def test_an_unknown_rule(tmp_path, capsys):
    assert "has no LongBench rule 'thudn': choose one of fox, thudm" in error_line(
        capsys, run_folder(tmp_path), "--longbench-rule", "thudn")


def test_a_run_with_nothing_scored_from_generations(tmp_path, capsys):
    out = run_folder(tmp_path, suite="table2", task="piqa", metric="acc")
    assert "nothing to rescore" in error_line(capsys, out)
    assert "scores no LongBench task" in error_line(capsys, out, "--longbench-rule", "fox")
