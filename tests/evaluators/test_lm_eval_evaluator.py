"""Under data parallelism every process hands lm-eval every request (the adapter shares them), but
only the first keeps lm-eval's output: the others skip its bootstrap stderrs and sample logs. lm-eval's
environment entries are gathered once per process, by lm-eval's own function, on the first alone."""
import lm_eval.api.metrics
import lm_eval.evaluator
import lm_eval.loggers.utils
import pytest

from path_eval import load_model
from path_eval.evaluators import EvaluationContext
from path_eval.evaluators.lm_eval import LmEvalEvaluator, lm_eval_environment
from path_eval.lm import PathEvalLM
from path_eval.plan import resolve_plan
from path_eval.suites import load_suite
from tests.helpers import counted, fixture_data, save_tiny_model


class AloneAs:
    """A process group of one process that calls itself `rank` of two: it answers every request."""

    world_size = 2

    def __init__(self, rank: int):
        self.rank = rank

    def model_device(self, device):
        return device

    def gather_object(self, obj):
        return [obj]

    def map_strided(self, fn_many, items):
        return fn_many(list(items))

    def shared_answers(self, costs, answer):
        return answer(list(range(len(costs))))


def lambada_on(rank: int, tmp_path, monkeypatch):
    """A plan of lambada_openai (3 samples) and a tiny model's lm that calls itself `rank` of two."""
    monkeypatch.setenv("LOCAL_RANK", str(rank))  # as the launcher sets it: lm-eval returns output on 0 alone
    model = save_tiny_model(tmp_path / "model", variant="rope")
    plan = resolve_plan(load_suite("table2"), [str(model)], tasks=["lambada_openai"], limit=3,
                        data_dir=fixture_data(tmp_path / "data", "lambada_openai"))
    weights, tokenizer = load_model(model)
    return plan, PathEvalLM(str(model), model=weights, tokenizer=tokenizer, max_length=256, parallel=AloneAs(rank))


@pytest.mark.parametrize("rank, keeps_output", [(0, True), (1, False)])
def test_only_the_first_process_bootstraps_and_logs_samples(rank, keeps_output, tmp_path, monkeypatch):
    plan, lm = lambada_on(rank, tmp_path, monkeypatch)
    calls = {"bootstrap": 0, "sample log": 0}

    monkeypatch.setattr(lm_eval.api.metrics, "bootstrap_stderr",  # perplexity's stderr
                        counted(calls, "bootstrap", lm_eval.api.metrics.bootstrap_stderr))
    monkeypatch.setattr(lm_eval.evaluator, "hash_string",  # three per logged sample
                        counted(calls, "sample log", lm_eval.evaluator.hash_string))
    monkeypatch.setenv("DISABLE_MULTIPROC", "1")  # the bootstrap in this process: no pool on 2 cores
    context = EvaluationContext(plan, plan.models[0], tmp_path / "out", "sha", bootstrap_iters=1000)
    results = LmEvalEvaluator().run(lm, plan.of_kind("lm_eval", plan.models[0].name), context)
    if keeps_output:
        [result] = results
        assert result.metrics["perplexity"][0][1] > 0 and len(result.samples) == 3
        assert calls == {"bootstrap": 1, "sample log": 9}
    else:
        assert results == [] and calls == {"bootstrap": 0, "sample log": 0}


@pytest.mark.parametrize("rank", [0, 1])
def test_lm_evals_environment_entries_are_gathered_once_on_the_first_process(rank, tmp_path, monkeypatch):
    plan, lm = lambada_on(rank, tmp_path, monkeypatch)
    gathered = []
    original = lm_eval.loggers.utils.add_env_info

    def own_add_env_info(storage):  # lm-eval's, keeping a copy of what it added
        original(storage)
        gathered.append(dict(storage))

    monkeypatch.setattr(lm_eval.loggers.utils, "add_env_info", own_add_env_info)
    monkeypatch.setattr(lm_eval.evaluator, "add_env_info", own_add_env_info)  # simple_evaluate's own name for it
    lm_eval_environment.cache_clear()  # nothing gathered yet in this process
    try:
        context = EvaluationContext(plan, plan.models[0], tmp_path / "out", "sha", bootstrap_iters=0)
        outputs = [LmEvalEvaluator().run(lm, plan.of_kind("lm_eval", plan.models[0].name), context)
                   for _ in range(2)]  # two calls in one process: the next evaluator, the next model
        started = lm_eval_environment.cache_info().currsize  # whether this process began gathering
    finally:
        lm_eval_environment.cache_clear()
    assert lm_eval.evaluator.add_env_info is own_add_env_info  # simple_evaluate's name handed back
    if rank == 0:
        [entries] = gathered  # lm-eval's function ran once, for both calls
        assert started
        assert {"pretty_env_info", "lm_eval_version", "transformers_version", "upper_git_hash"} <= set(entries)
        for [result] in outputs:
            assert {key: result.lm_eval.run[key] for key in entries} == entries
    else:
        assert not started and gathered == [] and outputs == [[], []]
