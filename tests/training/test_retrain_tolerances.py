"""Retraining tolerances: per model and task, twice the largest baseline-vs-retrain difference over
the retrains, in the governing entry's own kind (relative or absolute), never below the entry;
computed here by hand. `check` then looks the model's own entry up first."""
import json

import pytest

from path_eval.cli import main
from path_eval.results import write_results
from training.retrain import retraining_tolerances
from tests.helpers import records


def test_each_model_gets_twice_its_largest_difference_over_the_retrains():
    baseline = records(acc=0.50, ppl=20.0) + records(acc=0.60, ppl=10.0, model="n")
    first = records(acc=0.52, ppl=21.0) + records(acc=0.59, ppl=10.3, model="n")
    second = records(acc=0.49, ppl=19.0) + records(acc=0.60, ppl=10.4, model="n")
    tolerances = {"acc": {"abs": 0.001}, "word_perplexity": {"rel": 0.0005, "either_direction": True}}
    widened, observed = retraining_tolerances(baseline, tolerances, [first, second])
    assert widened["acc"] == {"abs": 0.001}  # the baseline's entries stay as they were
    assert observed["m/piqa/acc"]["largest"] == pytest.approx(0.02) and observed["m/piqa/acc"]["at"] == "m piqa acc"
    assert widened["m/piqa/acc"] == {"abs": pytest.approx(0.04)} and widened["n/piqa/acc"] == {"abs": pytest.approx(0.02)}
    # m: |21/20 - 1| = |19/20 - 1| = 0.05; n: 10.4/10 - 1 = 0.04 beats 0.03; either_direction is kept
    assert widened["m/wikitext/word_perplexity"] == {"rel": pytest.approx(0.10), "either_direction": True}
    assert widened["n/wikitext/word_perplexity"] == {"rel": pytest.approx(0.08), "either_direction": True}


def test_a_model_within_its_entry_gets_no_entry_of_its_own():
    baseline, retrain = records(acc=0.50, ppl=20.0), records(acc=0.50, ppl=20.0 * 1.0001)
    tolerances = {"piqa/acc": {"abs": 0.01}, "acc": {"abs": 0.5}, "word_perplexity": {"rel": 0.01}}
    widened, observed = retraining_tolerances(baseline, tolerances, [retrain])
    assert observed["m/piqa/acc"]["entry"] == "piqa/acc"  # task/metric governs before metric
    assert widened == tolerances  # 2e-4 observed stays under 0.01; acc did not move


def test_check_applies_a_models_own_entry_first(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.01}},
                                    "records": [r.model_dump() for r in records() + records(model="n")]}))
    write_results(records(acc=0.50) + records(acc=0.50, model="n"), tmp_path / "run" / "results.json")
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.01}, "n/piqa/acc": {"abs": 0.06}}}))
    code = main(["check", str(tmp_path / "run"), "--baseline", str(baseline), "--tolerances", str(own)])
    out = capsys.readouterr().out
    assert code == 1 and "REGRESSED m piqa acc" in out and "ok        n piqa acc" in out
