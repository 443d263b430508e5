"""The metric registry is the one source of a metric's facts: suites, scorers, records, reports and
`check` all read it, so registering a metric changes each of them without other edits."""
import pytest

from path_eval.errors import PathEvalError
from path_eval.metrics.retrieval import phonebook_exact_match, string_match_all, string_match_part
from path_eval.metrics.babilong import babilong_accuracy
from path_eval.metrics.longbench import qa_f1_score
from path_eval.metrics.registry import REGISTRY, Metric, metric_entry
from path_eval.reports.check import check
from path_eval.reports.tables import value_cell
from path_eval.suites import available_suites, load_suite
from path_eval.tasks.generated import process_results
from tests.helpers import records


def test_every_metric_a_suite_names_is_registered():
    for name in available_suites():
        suite = load_suite(name)
        for metric in [m.name for t in suite.tasks for m in t.metrics] + [a.metric for a in suite.aggregates]:
            assert metric_entry(metric).name == metric


def test_scored_metrics_are_the_benchmarks_functions():
    assert metric_entry("string_match_all").function is string_match_all
    assert metric_entry("string_match_part").function is string_match_part
    assert metric_entry("phonebook_exact_match").function is phonebook_exact_match
    assert metric_entry("qa_f1_score").function is qa_f1_score
    assert metric_entry("babilong_accuracy").function is babilong_accuracy
    assert metric_entry("perplexity").function is None and not metric_entry("perplexity").higher_is_better
    assert metric_entry("perplexity").aggregation == "perplexity" and metric_entry("acc").aggregation == "mean"


def test_generated_scorer_compares_against_the_registered_field():
    score = process_results(["string_match_all", "phonebook_exact_match"])
    doc = {"outputs": ["1234567", "7654321"], "answer": "555-0100"}
    assert score(doc, ["1234567 and 555-0100"]) == {"string_match_all": 0.5, "phonebook_exact_match": 0.0}
    assert score(doc, ["555-0100\n1234567"])["phonebook_exact_match"] == 1.0


def test_unknown_metric_is_one_line_listing_the_known(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndescription: x\ntasks:\n  - {name: piqa, lm_eval_task: piqa, metrics: [accuracy]}\n")
    with pytest.raises(PathEvalError) as err:
        load_suite(str(suite))
    message = str(err.value)
    assert "\n" not in message and "tasks.0.metrics.0.name" in message and "unknown metric 'accuracy'" in message
    assert "acc, acc_norm" in message and "babilong_accuracy" in message
    with pytest.raises(PathEvalError, match="unknown metric 'x'"):
        metric_entry("x")


def test_a_suite_stating_a_direction_is_refused(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndescription: x\ntasks:\n  - {name: wikitext, lm_eval_task: wikitext,\n"
                     "     metrics: [{name: word_perplexity, higher_is_better: false}]}\n")
    with pytest.raises(PathEvalError, match="higher_is_better comes from the metric registry .*remove it"):
        load_suite(str(suite))


@pytest.fixture
def lower_is_better_fraction(monkeypatch):
    """`acc` re-registered as a lower-is-better value (as a new metric would be)."""
    monkeypatch.setitem(REGISTRY, "acc", Metric("acc", None, higher_is_better=False, display="value"))


def test_a_registered_metric_sets_the_reports_unit(lower_is_better_fraction):
    acc = records(acc=0.55, acc_stderr=None)[0]
    assert value_cell(acc) == "0.55"


def test_the_reports_unit_follows_the_registry():
    acc = records(acc=0.55, acc_stderr=None)[0]
    assert value_cell(acc) == "55.0"


def test_a_registered_metric_sets_checks_direction(lower_is_better_fraction):
    """A lower acc now improves; a higher one regresses (the records' own field says the opposite)."""
    baseline = records(acc=0.55)
    findings, problems, _ = check(records(acc=0.40), baseline, {})
    assert not problems and not next(f for f in findings if f.key[4] == "acc").regressed
    findings, _, _ = check(records(acc=0.70), baseline, {})
    assert next(f for f in findings if f.key[4] == "acc").regressed


def test_a_registered_metric_is_accepted_by_suites(monkeypatch, tmp_path):
    monkeypatch.setitem(REGISTRY, "my_metric", Metric("my_metric", None, True, "percent"))
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndescription: x\ntasks:\n  - {name: piqa, lm_eval_task: piqa, metrics: [my_metric]}\n")
    assert load_suite(str(suite)).tasks[0].metrics[0].name == "my_metric"

