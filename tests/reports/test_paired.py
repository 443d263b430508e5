"""`compare` tests each delta paired on the per-sample logs: McNemar's exact test for 0/1 scores, a
paired bootstrap otherwise, both checked against scipy (a dependency of lm-eval's scikit-learn) on
hand-made run folders; different samples, or logs that do not give a record's value, are unpaired
and say so."""
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from path_eval.cli import main
from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan
from path_eval.reports.paired import RunSamples, mcnemar_exact
from path_eval.reports.tables import comparison, comparison_note
from path_eval.results import ResultRecord, write_results
from path_eval.suites import load_suite
from tests.helpers import records

PROVENANCE = records()[0].provenance


def write_plan(folder: Path, suite: str, model: str, item: PlannedItem) -> None:
    """plan.json of a run of `item` alone on `model`."""
    plan = ResolvedPlan(suite=load_suite(suite), models=[PlannedModel(path=folder, name=model, source=str(folder),
                                                                      max_length=4096)],
                        items=[item], data_dir=folder)
    (folder / "plan.json").write_text(plan.model_dump_json())


def write_run(folder: Path, model: str, suite: str, task: str, metric: str, scores, kind="lm_eval", docs=None,
              value=None, stderr=0.05) -> Path:
    """A run folder as `eval.py run` leaves it: results.json, plan.json, samples/<model>/<task>.jsonl."""
    rows = [{"doc_id": i, "doc": {"question": (docs or {}).get(i, f"question {i}")}, "scores": {metric: s}}
            for i, s in enumerate(scores)]
    (folder / "samples" / model).mkdir(parents=True)
    (folder / "samples" / model / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_plan(folder, suite, model, PlannedItem(task=task, kind=kind, length=None, models=[model],
                                                 lm_eval_tasks=[task]))
    record = ResultRecord(suite=suite, model=model, task=task, length=None, metric=metric,
                          value=float(np.mean(scores)) if value is None else value, stderr=stderr, n=len(scores),
                          higher_is_better=True, provenance=PROVENANCE)
    write_results([record], folder / "results.json")
    return folder


def compared(tmp_path, first, second, task="piqa", metric="acc", suite="table2", first_stderr=0.05, **second_options):
    runs = [write_run(tmp_path / "a", "a", suite, task, metric, first, stderr=first_stderr),
            write_run(tmp_path / "b", "b", suite, task, metric, second, **second_options)]
    from path_eval.results import load_records

    header, rows = comparison([(p.name, load_records(p)) for p in runs], [RunSamples(p) for p in runs])
    return header, rows


def accuracies(both: int, only_first: int, only_second: int, neither: int):
    first = [1] * both + [1] * only_first + [0] * only_second + [0] * neither
    second = [1] * both + [0] * only_first + [1] * only_second + [0] * neither
    return first, second


@pytest.mark.parametrize("only_first, only_second", [(0, 0), (3, 12), (12, 3), (5, 5), (0, 7), (40, 61)])
def test_mcnemar_exact_equals_scipys_binomial_test(only_first, only_second):
    first, second = accuracies(20, only_first, only_second, 10)
    expected = 1.0 if only_first + only_second == 0 else \
        stats.binomtest(only_first, only_first + only_second, 0.5).pvalue
    assert mcnemar_exact(np.array(first), np.array(second)) == pytest.approx(expected, rel=1e-12)


def test_a_paired_accuracy_delta_is_marked_where_the_unpaired_test_misses_it(tmp_path):
    """Same 60 questions: 3 answered only by the first run, 12 only by the second. McNemar p = 0.035;
    the unpaired z test on the two binomial standard errors gives p = 0.098."""
    first, second = accuracies(25, 3, 12, 20)
    stderr = [float(np.std(s, ddof=1) / np.sqrt(len(s))) for s in (first, second)]
    header, rows = compared(tmp_path, first, second, first_stderr=stderr[0], stderr=stderr[1])
    [row] = rows
    expected = stats.binomtest(3, 15, 0.5).pvalue
    assert header[-4:] == ["a:a", "b:b", "delta", "test"]
    assert row[-2:] == ["+15.00 *", f"McNemar exact p={expected:.2g}"] and expected < 0.05
    unpaired = 2 * stats.norm.sf(0.15 / np.hypot(*stderr))
    assert unpaired == pytest.approx(0.098, abs=5e-4)  # not beyond noise for the unpaired test


def test_the_paired_bootstrap_agrees_with_the_normal_theory_of_the_paired_difference(tmp_path):
    """A continuous score (LongBench's qa_f1_score) on 300 shared samples: the bootstrap's p and the
    paired t distribution's differ by Monte Carlo and small-sample error only."""
    rng = np.random.default_rng(7)
    first = rng.uniform(0, 1, 300)
    second = np.clip(first + rng.normal(0.02, 0.15, 300), 0, 1)
    _, [row] = compared(tmp_path, first.tolist(), second.tolist(), task="qasper", metric="qa_f1_score",
                        suite="longbench_e")
    method, p = row[-1].rsplit(" p=", 1)
    assert method == "paired bootstrap"
    assert float(p) == pytest.approx(stats.ttest_rel(second, first).pvalue, abs=0.015)


def test_a_constant_shift_on_every_sample_is_beyond_noise_and_no_change_is_not(tmp_path):
    scores = np.linspace(0.1, 0.8, 40)
    _, [row] = compared(tmp_path, scores.tolist(), (scores + 0.05).tolist(), task="qasper", metric="qa_f1_score",
                        suite="longbench_e")
    assert row[-2:] == ["+5.00 *", "paired bootstrap p<0.0001"]
    _, [same] = compared(tmp_path / "same", scores.tolist(), scores.tolist(), task="qasper",
                         metric="qa_f1_score", suite="longbench_e")
    assert same[-2:] == ["+0.00", "paired bootstrap p=1"]


def test_different_samples_are_tested_unpaired_with_a_caution(tmp_path):
    first, second = accuracies(25, 3, 12, 20)
    _, rows = compared(tmp_path, first, second, docs={4: "another question"})
    assert rows[0][-1].startswith("unpaired z p=") and rows[0][-1].endswith("(samples differ)")
    assert comparison_note(rows).endswith("CAUTION: 1 deltas compare different samples: their tests are unpaired")


def test_a_log_that_does_not_give_the_records_value_is_not_paired(tmp_path):
    first, second = accuracies(25, 3, 12, 20)
    _, [row] = compared(tmp_path, first, second, value=0.9)
    assert row[-1].endswith("(the per-sample log does not give the value)")


def test_compare_names_the_method_on_the_command_line(tmp_path, capsys):
    first, second = accuracies(25, 3, 12, 20)
    for name, scores in (("a", first), ("b", second)):
        write_run(tmp_path / name, name, "table2", "piqa", "acc", scores)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b" / "results.json"), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert f"piqa,acc,,46.7,61.7,+15.00 *,McNemar exact p={stats.binomtest(3, 15, 0.5).pvalue:.2g}" in out


def write_rows_run(folder: Path, model: str, task: str, kind: str, metric: str, rows: list[dict], value: float):
    """A flip-flop or corpus run folder: the task's log at 512 tokens is `<task>@512.jsonl`."""
    (folder / "samples" / model).mkdir(parents=True)
    (folder / "samples" / model / f"{task}@512.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_plan(folder, "ci", model, PlannedItem(task=task, kind=kind, length=512, models=[model]))
    write_results([ResultRecord(suite="ci", model=model, task=task, length=512, metric=metric, value=value,
                                stderr=0.01, n=len(rows), higher_is_better=False, provenance=PROVENANCE)],
                  folder / "results.json")
    return folder


def test_pooled_flipflop_rates_over_seeds_and_corpus_perplexities_are_paired(tmp_path):
    """Flip-flop: the mean over two seeds of wrong reads over reads, a stratum per seed; a corpus:
    exp of the summed NLL over the tokens of its blocks. One fewer wrong read per sequence, and a
    lower NLL on every block, are beyond noise."""
    from path_eval.results import load_records

    def flipflop(shift):
        rows = [{"doc_id": i, "seed": seed, "reads": 20, "wrong": 3 + i % 4 - shift}
                for seed in (1, 2) for i in range(30)]
        rates = [sum(r["wrong"] for r in rows if r["seed"] == s) / sum(r["reads"] for r in rows if r["seed"] == s)
                 for s in (1, 2)]
        return rows, float(np.mean(rates))

    def corpus(shift):
        rows = [{"block": i, "tokens_sha256": f"block {i}", "nll_sum": [500.0 + 10 * i - shift, 480.0 - shift],
                 "count": [256, 255]} for i in range(25)]
        return rows, float(np.exp(sum(sum(r["nll_sum"]) for r in rows) / sum(sum(r["count"]) for r in rows)))

    for task, kind, metric, make in (("flipflop_in", "flipflop", "flipflop_error", flipflop),
                                     ("heldout", "corpus", "perplexity", corpus)):
        runs = [write_rows_run(tmp_path / task / name, name, task, kind, metric, *make(shift))
                for name, shift in (("a", 0), ("b", 1))]
        logs = [RunSamples(p) for p in runs]
        rebuilt = logs[0].scores(load_records(runs[0])[0])  # a string would say why the value was not rebuilt
        assert not isinstance(rebuilt, str) and len(rebuilt.strata) == (2 if kind == "flipflop" else 1)
        _, [row] = comparison([(p.name, load_records(p)) for p in runs], logs)
        assert row[-1] == "paired bootstrap p<0.0001" and row[-2].endswith(" *"), row


def test_mcnemar_fewest_samples_is_where_scipys_most_extreme_split_first_reaches_significance():
    from path_eval.reports.paired import MCNEMAR_FEWEST, mcnemar_floor

    fewest = next(n for n in range(1, 20) if stats.binomtest(0, n, 0.5).pvalue < 0.05)
    assert MCNEMAR_FEWEST == fewest == 6
    assert mcnemar_floor(4) == pytest.approx(stats.binomtest(0, 4, 0.5).pvalue)


def test_a_test_that_cannot_reach_significance_at_its_sample_count_says_so(tmp_path):
    """RoPE's 100 -> 0 on 4 samples: McNemar's least p is 0.125, so no * can appear; the cell and
    the note say so and name the 6 samples that could. On 6 samples the same change is marked."""
    _, [row] = compared(tmp_path, [1] * 4, [0] * 4, stderr=0.0, first_stderr=0.0)
    assert row[-2:] == ["-100.00", "McNemar exact p=0.12 (4 samples: p >= 0.12)"]
    assert "1 McNemar test(s) cannot reach p < 0.05 at their sample count (least p 0.12, 2 * 0.5^samples): " \
           "no * can appear there; 6 samples or more could" in comparison_note([row])
    _, [row] = compared(tmp_path / "six", [1] * 6, [0] * 6)
    assert row[-2:] == ["-100.00 *", "McNemar exact p=0.031"] and "cannot reach" not in comparison_note([row])
