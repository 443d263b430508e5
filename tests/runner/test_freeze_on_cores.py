"""Large sample sets are frozen in worker processes when the machine has spare cores: the files are
byte for byte the ones one process writes, for the same plan, tokenizer and seed."""
from pathlib import Path

from path_eval.evaluators import EvaluationContext
from path_eval.evaluators.generated import GeneratedEvaluator
from path_eval.models.identity import tokenizer_sha256
from path_eval.models.tokenizer import load_tokenizer
from path_eval.models.zoo import zoo_models
from path_eval.plan import resolve_plan
from path_eval.runner import processes
from path_eval.suites import load_suite


def frozen_sets(out: Path):
    plan = resolve_plan(load_suite("ci"), ["zoo:fox"], tasks=["niah_single_1", "niah_multikey_2", "phonebook"],
                        lengths=["1k"], data_dir=out / "data")
    model = plan.models[0]
    tokenizer = load_tokenizer(zoo_models("fox")[0])
    context = EvaluationContext(plan, model, out / "run", tokenizer_sha256(tokenizer))
    return GeneratedEvaluator().frozen_sets(tokenizer, plan.of_kind("generated", model.name), context)


def written(cache: Path) -> dict[str, bytes]:
    return {str(p.relative_to(cache)): p.read_bytes() for p in sorted(cache.rglob("*.jsonl"))}


def test_sets_frozen_in_workers_equal_those_frozen_here(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "one"))
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=1)
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "pool"))  # the workers inherit it
    monkeypatch.setattr(processes, "POOL_MIN_TOKENS", 0)
    sets = frozen_sets(tmp_path)
    assert len(sets) == 3  # NIAH x 2, PhoneBook: two workers beside this process
    processes.freeze_on_cores(sets, cores=3)
    one, pool = written(tmp_path / "one"), written(tmp_path / "pool")
    assert len(one) == 3 and one == pool


def test_small_sets_stay_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(processes, "ProcessPoolExecutor", None)  # any pool would fail
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=16)  # 3 sets of 1K tokens: under POOL_MIN_TOKENS
    assert len(written(tmp_path / "cache")) == 3
