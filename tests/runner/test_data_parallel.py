"""Two data-parallel processes (torchrun on the CPU: gloo; `accelerate launch --multi_gpu` on GPUs
takes the same path) give exactly the records of one process: every request computed once, on the
process its token-balanced share puts it on, the frozen samples split between the processes and
byte for byte those of one process, the extrapolation blocks taken in turns and their sums gathered.
One suite holds a Table 2 task, RULER, PhoneBook, a corpus and flip-flop (on a zoo model), so the
test launches each run once."""
import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from path_eval.evaluators import FrozenSet
from path_eval.lm.distributed import balanced_shares
from path_eval.runner.processes import PHASES, freeze_shares
from path_eval.results import load_records
from tests.helpers import ROOT, cache_with_task_index, fixture_data, save_tiny_model

MIXED_SUITE = """
name: mixed
description: "Table 2, RULER, PhoneBook, a corpus and flip-flop at once"
samples: 2
max_blocks: 3
bucket_size: 128
tasks:
  - {name: piqa, lm_eval_task: piqa, metrics: [acc], models: [model]}
  - {name: vt, generator: ruler/vt, lengths: [1k], metrics: [string_match_all], models: [model]}
  - {name: phonebook, generator: phonebook, lengths: [1k], seeds: 2, stop: ["\\n"], metrics: [phonebook_exact_match],
     models: [model]}
  - {name: code, corpus: {python_stdlib: true}, lengths: [512], metrics: [perplexity], models: [model]}
  - {name: flipflop, flipflop: {p_ignore: 0.8}, lengths: [512], samples: 40, metrics: [flipflop_error],
     models: [flipflop_rope]}
"""


def run(launcher: list[str], args: list[str], out: Path, cache: Path) -> list:
    done = subprocess.run(launcher + ["eval.py", "run", *args, "--out", str(out), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PATH_EVAL_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr[-3000:]
    return load_records(out)


def files(folder: Path, pattern: str) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.glob(pattern))}


def test_two_processes_give_the_records_of_one(tmp_path):
    model = save_tiny_model(tmp_path / "model", variant="rope")  # the cheapest decoding on a CPU
    data = fixture_data(tmp_path / "data", "piqa")
    suite = tmp_path / "mixed.yaml"
    suite.write_text(MIXED_SUITE)
    args = ["--suite", str(suite), "--model", str(model), "--model", "zoo:flipflop_rope", "--data-dir", str(data)]
    # Fresh caches, so that each run freezes its samples itself; lm-eval's task index in them, which
    # each of the three processes would otherwise build (about 10 s of a CPU each) before its plan.
    cache1, cache2 = cache_with_task_index(tmp_path / "cache1"), cache_with_task_index(tmp_path / "cache2")
    began = time.perf_counter()
    one = run([sys.executable], args, tmp_path / "one", cache1)
    wall = time.perf_counter() - began
    two = run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"], args,
              tmp_path / "two", cache2)
    fields = lambda r: (r.task, r.length, r.bucket, r.metric, r.n, r.value, r.stderr, r.seed_std)  # noqa: E731
    assert {r.task for r in one} == {"piqa", "vt", "phonebook", "code", "flipflop"}
    assert [fields(r) for r in two] == [fields(r) for r in one]
    assert {r.provenance.processes for r in two} == {2} and {r.provenance.processes for r in one} == {1}
    # no request padded in or computed twice
    assert {r.provenance.requests_computed for r in two} == {r.provenance.requests_computed for r in one}
    # sample logs, curves and block logs alike; the frozen sets split between the processes, same bytes
    for pattern in ("samples/*/*.jsonl", "curves/model/*.npy"):
        assert files(tmp_path / "two", pattern) == files(tmp_path / "one", pattern), pattern
    assert files(tmp_path / "cache2", "frozen/**/*.jsonl") == files(tmp_path / "cache1", "frozen/**/*.jsonl")
    assert len(files(tmp_path / "cache1", "frozen/**/*.jsonl")) == 4  # RULER's, PhoneBook's two, flip-flop's
    phases = json.loads((tmp_path / "two" / "timings.json").read_text())["processes"]
    assert len(phases) == 2 and all(p["requests"] > 0 and p["load"] > 0 for p in phases)
    # one process's main-thread phases, from its start (the interpreter, imports, the plan) on,
    # fit in the wall time the launch took; the model's load runs in its thread beside `samples`
    [alone] = json.loads((tmp_path / "one" / "timings.json").read_text())["processes"]
    assert list(alone) == list(PHASES) and alone["start"] > 0.1 and alone["tokenizer"] > 0
    assert sum(alone[p] for p in PHASES if p != "load") < wall
    # lm-eval's layout, written by the first process alone: the same tasks, every document once
    lm_eval_docs = lambda run: {p.name.rsplit("_", 1)[0]: sorted(json.loads(x)["doc_id"] for x in p.read_text().splitlines())  # noqa: E731
                                for p in (tmp_path / run / "lm_eval" / "model").glob("samples_*.jsonl")}
    assert lm_eval_docs("two") == lm_eval_docs("one") != {}


def test_shares_balance_tokens_not_counts():
    costs = [100, 1, 1, 1, 1, 98]
    shares = balanced_shares(costs, 2)
    assert [sum(costs[i] for i in share) for share in shares] == [101, 101]  # not 3 requests each by stride
    assert sorted(i for share in shares for i in share) == list(range(len(costs)))
    assert all(share == sorted(share) for share in shares)
    assert balanced_shares(costs, 2) == shares  # a function of the costs alone
    costs = [7, 3, 9, 2, 8, 4, 4, 1]
    loads = [sum(costs[i] for i in share) for share in balanced_shares(costs, 3)]
    assert sum(loads) == 38 and max(loads) - min(loads) <= 1
    assert balanced_shares([5], 2) == [[0], []]


def test_each_process_freezes_its_share_of_the_sets_then_waits_for_all():
    done = []

    class SecondOfTwo:
        rank, world_size = 1, 2

        def barrier(self):
            done.append("barrier")

    sets = [FrozenSet(tokens, partial(done.append, index)) for index, tokens in enumerate([10, 50, 20, 30])]
    freeze_shares(sets, SecondOfTwo())
    assert done == [2, 3, "barrier"]  # 50 tokens each: sets 1 and 0 are the first process's
    done.clear()
    freeze_shares(sets, None)
    assert done == [0, 1, 2, 3]
