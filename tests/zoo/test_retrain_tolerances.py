"""Retraining tolerances: twice the largest baseline-vs-retrain difference an entry governs, in the
entry's own kind (relative or absolute), never below the entry; computed here by hand."""
import pytest

from path_eval.zoo.retrain import retraining_tolerances
from tests.helpers import records


def test_each_entry_widens_to_twice_its_largest_difference():
    baseline = records(acc=0.50, ppl=20.0) + records(acc=0.60, ppl=10.0, model="n")
    retrain = records(acc=0.52, ppl=21.0) + records(acc=0.59, ppl=10.3, model="n")
    tolerances = {"acc": {"abs": 0.001}, "word_perplexity": {"rel": 0.0005, "either_direction": True}}
    widened, observed = retraining_tolerances(baseline, tolerances, retrain)
    assert observed["acc"]["largest"] == pytest.approx(0.02) and observed["acc"]["at"] == "m piqa acc"
    assert widened["acc"] == {"abs": pytest.approx(0.04)}
    # 21/20 - 1 = 0.05 beats 10.3/10 - 1 = 0.03; either_direction is kept
    assert widened["word_perplexity"] == {"rel": pytest.approx(0.10), "either_direction": True}


def test_an_entry_is_never_narrowed_and_task_entries_come_first():
    baseline, retrain = records(acc=0.50, ppl=20.0), records(acc=0.50, ppl=20.0 * 1.0001)
    tolerances = {"piqa/acc": {"abs": 0.01}, "acc": {"abs": 0.5}, "word_perplexity": {"rel": 0.01}}
    widened, observed = retraining_tolerances(baseline, tolerances, retrain)
    assert widened["piqa/acc"] == {"abs": 0.01} and "acc" not in observed  # piqa/acc governs the record
    assert widened["word_perplexity"] == {"rel": 0.01}  # 2e-4 observed stays under the entry's 0.01
