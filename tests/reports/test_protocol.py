"""`report` names each setting of a stored run that differs from its suite's protocol (the built-in
suite of its name): limit, seed, suite settings, tasks left out, a task's lengths and sample counts."""
from path_eval.cli import main
from path_eval.plan import resolve_plan
from path_eval.reports.protocol import departures
from path_eval.results import write_results
from path_eval.runner.run import write_plan
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE, ROOT


def ci_plan(suite=None, **options):
    return resolve_plan(suite or load_suite("ci"), ["zoo"], data_dir=ROOT / "no-data-needed", **options)


def test_a_run_of_the_suite_as_it_is_departs_from_nothing():
    assert departures(ci_plan()) == []


def test_every_changed_setting_is_named_with_the_protocols_value():
    ci = load_suite("ci")
    cut = ci.model_copy(update={"bucket_size": 1024, "tasks": [t for t in ci.tasks if t.name != "flipflop_dense"]})
    found = departures(ci_plan(cut, limit=3, seed=7, tasks=["heldout", "niah_single_1", "flipflop_in"],
                               lengths=None))
    assert found == ["limit 3 (the protocol: every sample)", "seed 7 (the protocol: 1234)",
                     "bucket_size 1024 (the protocol: 512)",
                     "tasks not run: niah_multikey_2, phonebook, flipflop_sparse, flipflop_dense, a5",
                     "niah_single_1 samples 3 (the protocol: 4)", "flipflop_in samples 3 (the protocol: 128)"]
    other_lengths = departures(ci_plan(lengths=["1k"], tasks=["heldout"]))
    assert other_lengths == ["tasks not run: niah_single_1, niah_multikey_2, phonebook, flipflop_in, flipflop_sparse, "
                             "flipflop_dense, a5", "heldout lengths 1024 (the protocol: 1024, 2048, 4096)"]


def test_report_prints_them_under_the_suites_table(tmp_path, capsys):
    from path_eval.results import Provenance, ResultRecord

    plan = ci_plan(limit=2, tasks=["niah_single_1"])
    write_plan(plan, tmp_path)
    write_results([ResultRecord(suite="ci", model="rope", task="niah_single_1", length=1024,
                                metric="string_match_all", value=1.0, stderr=0.0, n=2, higher_is_better=True,
                                provenance=Provenance(**(PROVENANCE | {"limit": 2})))], tmp_path / "results.json")
    assert main(["report", str(tmp_path), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert ("CAUTION, settings that differ from the ci suite's protocol: limit 2 (the protocol: every sample); "
            "tasks not run: heldout, niah_multikey_2, phonebook, flipflop_in, flipflop_sparse, flipflop_dense, a5; "
            "niah_single_1 samples 2 (the protocol: 4)") in out


def test_many_tasks_left_out_are_counted_past_the_first_few():
    """A run of one table of a suite of 80 tasks (conversion) names a dozen and counts the rest."""
    ci = load_suite("ci")
    many = ci.model_copy(update={"name": "many", "tasks": [ci.task("flipflop_in").model_copy(update={"name": f"f{i}"})
                                                           for i in range(20)]})
    found = departures(ci_plan(many, tasks=["f0"]))
    assert found == [f"tasks not run: {', '.join(f'f{i}' for i in range(1, 13))} and 7 more"]
