"""Large sample sets are frozen in worker processes when the machine has spare cores: the files are
byte for byte the ones one process writes, for the same plan, tokenizer and seed."""
import json
import pickle
import subprocess
import sys
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


class RecordingPool:
    """Stands in for the process pool: what it was given (the function and its items), run here."""
    given: list[tuple] = []

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, function, items):
        RecordingPool.given.append((function, items))
        return [function(item) for item in items]


def test_sets_frozen_already_start_no_workers(tmp_path, monkeypatch):
    """A run whose large sets are all frozen (a study's second model) checks them here and spawns no
    pool; where one is missing, only that one goes to the workers."""
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(processes, "POOL_MIN_TOKENS", 0)
    monkeypatch.setattr(processes, "ProcessPoolExecutor", RecordingPool)
    RecordingPool.given = []
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=16)
    assert [len(items) for _, items in RecordingPool.given] == [3]  # none frozen: all three to the pool
    before = written(tmp_path / "cache")
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=16)
    assert [len(items) for _, items in RecordingPool.given] == [3]  # all frozen: no pool
    [gone, *kept] = sorted((tmp_path / "cache").rglob("*.key.json"))
    gone.unlink()
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=16)
    assert len(RecordingPool.given) == 1  # one set left to make: under two workers, made here
    assert written(tmp_path / "cache") == before and gone.is_file()


def test_found_frozen_generates_nothing(tmp_path, monkeypatch):
    from path_eval.tasks import frozen, generated

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    sets = frozen_sets(tmp_path)
    assert not any(frozen.found_frozen(s.freeze) for s in sets)
    assert not (tmp_path / "cache").exists()  # no set, key or lock file
    processes.freeze_on_cores(sets, cores=1)
    monkeypatch.setattr(generated, "first_frozen", None)  # reading a set after its check would fail
    assert all(frozen.found_frozen(s.freeze) for s in sets)


def test_what_a_worker_unpickles_imports_neither_torch_nor_lm_eval(tmp_path, monkeypatch):
    """A spawned worker imports what its task's pickle names: the function it runs and the set's
    generator, not the runner's modules, which import the whole model stack (seconds a worker)."""
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(processes, "ProcessPoolExecutor", RecordingPool)
    monkeypatch.setattr(processes, "POOL_MIN_TOKENS", 0)
    RecordingPool.given = []
    processes.freeze_on_cores(frozen_sets(tmp_path), cores=3)
    [(function, items)] = RecordingPool.given
    (tmp_path / "task.pkl").write_bytes(pickle.dumps((function, items[0])))  # what a worker would be sent
    code = (f"import json, pickle, sys; pickle.loads(open({str(tmp_path / 'task.pkl')!r}, 'rb').read()); "
            "print(json.dumps([name for name in ('torch', 'lm_eval') if name in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_a_run_sizes_its_pool_by_the_cgroup_quota(monkeypatch):
    """16 cores visible under a quota of 2.5: workers beyond the quota would only wait for its next
    period, so the run freezes on 2."""
    from path_eval import cpu_threads

    monkeypatch.setattr(cpu_threads, "allowed_cores", lambda: 16)
    monkeypatch.setattr(cpu_threads, "cgroup_quota", lambda: 2.5)
    given = []
    monkeypatch.setattr(processes, "freeze_on_cores", lambda sets, cores: given.append(cores))
    processes.freeze_shares([], None)
    monkeypatch.setattr(cpu_threads, "cgroup_quota", lambda: None)
    processes.freeze_shares([], None)
    assert given == [2, 16]
