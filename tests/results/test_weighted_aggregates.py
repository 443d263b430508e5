"""An aggregate `weights: samples` is the mean over all the parts' samples (lm-eval's groups with
weight_by_size: MMLU's subjects, MATH's), `weights: tasks` (the default) the plain mean of the parts."""
import math

import pytest

from path_eval.results import Provenance, ResultRecord
from path_eval.results.records import aggregate
from path_eval.suites import SuiteSpec
from tests.helpers import PROVENANCE


def suite(weights):
    return SuiteSpec.model_validate({
        "name": "s", "description": "d",
        "tasks": [{"name": "a", "lm_eval_task": "a", "metrics": ["acc"]}, {"name": "b", "lm_eval_task": "b",
                                                                         "metrics": ["acc"]}],
        "aggregates": [{"name": "ab", "metric": "acc", "mean_of": ["a/acc", "b/acc"]} | weights]})


@pytest.mark.parametrize("weights, value", [({}, 0.5), ({"weights": "tasks"}, 0.5), ({"weights": "samples"}, 0.25)])
def test_an_aggregate_weighs_its_parts_as_the_suite_says(weights, value):
    p = Provenance(**PROVENANCE)
    # a: 1 of 1 sample right; b: 0 of 3 (their stderrs as lm-eval gives a mean's: sd / sqrt(n - 1))
    parts = [ResultRecord(suite="s", model="m", task=t, length=None, metric="acc", value=v, stderr=se, n=n,
                          higher_is_better=True, provenance=p) for t, v, se, n in (("a", 1.0, 0.0, 1),
                                                                                   ("b", 0.0, 0.0, 3))]
    [record] = aggregate(suite(weights), parts)
    assert record.value == value and record.n == 4
    # the samples' own mean: 1 right of 4
    if weights.get("weights") == "samples":
        assert record.value == sum([1, 0, 0, 0]) / 4


def test_the_stderr_of_a_weighted_mean_of_independent_parts():
    p = Provenance(**PROVENANCE)
    parts = [ResultRecord(suite="s", model="m", task=t, length=None, metric="acc", value=v, stderr=se, n=n,
                          higher_is_better=True, provenance=p) for t, v, se, n in (("a", 0.5, 0.1, 10),
                                                                                   ("b", 0.9, 0.05, 30))]
    [record] = aggregate(suite({"weights": "samples"}), parts)
    # Var(sum w_i x_i) = sum w_i^2 Var(x_i) for independent x_i, w = (10, 30) / 40
    assert record.value == pytest.approx(0.25 * 0.5 + 0.75 * 0.9)
    assert record.stderr == pytest.approx(math.sqrt((0.25 * 0.1) ** 2 + (0.75 * 0.05) ** 2))
