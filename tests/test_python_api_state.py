"""A failed `evaluate` leaves nothing behind in the process: interrupted (Ctrl-C caught by a notebook)
while it freezes its samples and its model still loads in the background, the next `evaluate` in the
same process gives the records a fresh process gives.

The model loads in a thread beside the samples. transformers patches process-wide names while it
loads one (`PreTrainedModel.tie_weights`, torch's default dtype) and restores them at the end; a load
left running past the failed call overlaps the next call's load, the two restore crosswise, and
`tie_weights` stays a no-op: every later transformers load (zoo:rope is a Llama) lacks its tied
`lm_head.weight`. A real checkpoint takes seconds to load; the zoo's loads in a blink, so here the
first load waits until another starts building its model, and that one until the first has ended
(a few seconds at most each): the crossing the two threads can take by chance, every time."""
import json
import os
import subprocess
import sys
import threading

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow

SUITE, MODELS = "ci", ["zoo:rope"]
ARGUMENTS = {"lengths": ["1k"], "limit": 1, "tasks": ["heldout"]}
FRESH_PROCESS = f"""
import json, sys, path_eval
results = path_eval.evaluate({SUITE!r}, {MODELS!r}, out=sys.argv[1], **{ARGUMENTS!r})
print(json.dumps([(r.task, r.length, r.bucket, r.metric, r.value) for r in results.records]))
"""


def scores(results) -> list:
    return [[r.task, r.length, r.bucket, r.metric, r.value] for r in results.records]


def test_an_evaluate_interrupted_while_its_model_loads_leaves_the_next_one_intact(tmp_path, monkeypatch):
    import path_eval
    from transformers import LlamaForCausalLM, PreTrainedModel

    from path_eval.models import loading
    from path_eval.runner import processes

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    fresh = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(tmp_path / "fresh")], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    tie_weights = PreTrainedModel.tie_weights

    another_load_builds, a_load_ended = threading.Event(), threading.Event()
    build, load_network = LlamaForCausalLM.__init__, loading.load_network
    builds = []

    def slow_first_build(self, config):
        builds.append(config)
        if len(builds) == 1:
            another_load_builds.wait(timeout=5)
        else:
            another_load_builds.set()
            a_load_ended.wait(timeout=5)
        build(self, config)

    def load_and_tell(*args, **kwargs):
        try:
            return load_network(*args, **kwargs)
        finally:
            a_load_ended.set()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(LlamaForCausalLM, "__init__", slow_first_build)
        patch.setattr(loading, "load_network", load_and_tell)
        with monkeypatch.context() as interrupt:
            interrupt.setattr(processes, "freeze_shares", interrupted)
            with pytest.raises(KeyboardInterrupt):
                path_eval.evaluate(SUITE, MODELS, out=tmp_path / "interrupted", **ARGUMENTS)
        results = path_eval.evaluate(SUITE, MODELS, out=tmp_path / "again", **ARGUMENTS)

    assert PreTrainedModel.tie_weights is tie_weights
    assert scores(results) == json.loads(fresh.stdout.strip().splitlines()[-1])
