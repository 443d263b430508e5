"""docs/extending.md, done: a generated task and a metric added by its steps, and a new kind of task
(its options, rules and evaluator, one `Kind` row passed to `register`), all from this file through
the registries the page names and nothing else, run by `path_eval.evaluate` on a tiny random model,
then read back by every stage that reads kinds: the plan, the runner, the records, rescore, compare's
paired tests, report's protocol check and `eval.py list`. Expected values are computed here from the
definitions, on the model itself, not by the harness."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import BaseModel, ConfigDict, Field

from path_eval.api import evaluate
from path_eval.models.random_checkpoint import random_model
from path_eval.cli import main
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, TaskResult
from path_eval.evaluators.registry import evaluator_of
from path_eval.kinds import KINDS, Kind, PlannedFields, SamplePairs, register
from path_eval.metrics.registry import Metric, metric_entry
from path_eval.plan import PlannedItem
from path_eval.reports.paired import RunSamples
from path_eval.reports.protocol import departures
from path_eval.results.rescore import rescore
from path_eval.results.sample_logs import log_names
from path_eval.samples.logs import slug
from path_eval.suites import TaskSpec, load_suite
from path_eval.tasks import generated

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # one short run on a tiny model: a generated task through lm-eval and the toy kind
LENGTH = 32
MODEL_SEED = 3


# ---------------------------------------------------------------- a generated task (docs: steps 1-5)

WORDS = ("apple", "river", "stone", "cloud")


def echo_generator(inputs: generated.GenerationInputs) -> list[dict]:
    """Step 1: samples asking the model to repeat a word; `outputs` is string_match_all's reference."""
    rng = np.random.default_rng(inputs.seed)
    words = [WORDS[i] for i in rng.integers(0, len(WORDS), inputs.num_samples)]
    return [{"input": f"Repeat the word. The word is {word}. The word is", "answer_prefix": "",
             "outputs": [word], "max_new_tokens": 4, "length": inputs.length} for word in words]


# ---------------------------------------------------------------- a metric (docs: step 1)

def copy_consistency(tokens: np.ndarray, predictions: np.ndarray) -> float:
    """A toy metric: the share of the copied half's positions where the model predicts what it
    predicted at the same position of the first half."""
    agree, count = copy_counts(tokens, predictions)
    return agree / count


def copy_counts(tokens: np.ndarray, predictions: np.ndarray) -> tuple[int, int]:
    half = tokens.shape[-1] // 2
    return int((predictions[..., half:] == predictions[..., :half]).sum()), int(predictions[..., half:].size)


# ---------------------------------------------------------------- a new kind: one module (here, this file)

class CopyOptions(BaseModel):
    """What a suite gives under `copy:`: the token ids the sequences draw from."""

    model_config = ConfigDict(extra="forbid")
    first_token: int = Field(ge=0)
    tokens: int = Field(gt=1)


def copy_sequences(options: CopyOptions, length: int, seed: int, count: int) -> np.ndarray:
    """`count` sequences of `length` tokens, the second half a copy of the first."""
    rng = np.random.default_rng(seed)
    half = rng.integers(options.first_token, options.first_token + options.tokens, size=(count, length // 2))
    return np.concatenate([half, half], axis=1)


def check_copy_length(task, length: int) -> None:
    from path_eval.errors import PathEvalError

    if length < 4 or length % 2:
        raise PathEvalError(f"task {task.name}: a copy sequence is an even number of at least 4 tokens: give "
                            "--lengths 32")


def copy_log_names(item: PlannedItem) -> list[str]:
    return [f"{item.task}.copy@{item.length}"]


# ---------------------------------------------------------------- its evaluator

class CopyEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        return []  # made from the seed in a moment

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        from path_eval.atomic_files import write_jsonl_atomic

        score = metric_entry("copy_consistency").function
        results = []
        for item in items:
            options = context.plan.spec(item).options
            per_seed, rows = [], []
            for seed in item.seeds:
                tokens = copy_sequences(options, item.length, seed, item.samples)
                with torch.inference_mode():
                    predictions = lm.model(torch.as_tensor(tokens, device=lm.device)).logits.argmax(-1).cpu().numpy()
                per_seed.append((score(tokens, predictions), None))
                rows += [{"doc_id": i, "seed": seed, **dict(zip(("agree", "count"), copy_counts(t, p)))}
                         for i, (t, p) in enumerate(zip(tokens, predictions))]
            [name] = KINDS[item.kind].log_names(item)
            write_jsonl_atomic(rows, context.sample_log(name))
            results.append(TaskResult(task=item.task, length=item.length, metrics={"copy_consistency": per_seed},
                                      n=len(rows), data_files=[], data_fingerprint=None, seeds=item.seeds))
        return results


COPY_KIND = Kind(name="copy", key="copy", options=CopyOptions, evaluator=f"{__name__}:CopyEvaluator",
                 describe=lambda task: f"copy of {task.options.tokens} tokens",
                 plan=lambda task, length, planning: PlannedFields(), log_names=copy_log_names, sampled=True,
                 context=lambda length: length, metrics=frozenset({"copy_consistency"}), check_length=check_copy_length,
                 pairing=SamplePairs(key=lambda row: (row["seed"], row["doc_id"]),
                                     numerator=lambda row: row["agree"], denominator=lambda row: row["count"],
                                     stratum=lambda row: row["seed"]))


SUITE = f"""name: toy
description: a generated task and a task of a new kind
lengths: [{LENGTH}]
samples: 3
tasks:
  - {{name: echo, generator: toy/echo, stop: ["\\n"], metrics: [string_match_all]}}
  - {{name: copy, copy: {{first_token: 100, tokens: 50}}, seeds: 2, metrics: [copy_consistency]}}
"""


def documented_registries() -> set[tuple[str, str]]:
    """(registry, module) pairs of docs/extending.md's table of registries."""
    page = (ROOT / "docs" / "extending.md").read_text()
    found = set()
    for row in re.findall(r"^\| [^|]+ \| (.+?) \| `(path_eval/[\w/]+)\.py` \|$", page, re.M):
        names, module = row
        found |= {(name, module.replace("/", ".")) for name in re.findall(r"`([A-Z_]+)`", names)}
    return found


@pytest.fixture
def extended(monkeypatch):
    """The steps of docs/extending.md, each an entry in a registry the page names (undone after): the
    new kind is its row, registered as the built-in kinds are, nothing else."""
    import path_eval.metrics.registry

    touched = set()

    def add(module, registry: str, key, value):
        monkeypatch.setitem(getattr(module, registry), key, value)
        touched.add((registry, module.__name__))

    add(generated, "GENERATORS", "toy/echo", generated.Generator(echo_generator, new_tokens=4, version="1"))
    add(path_eval.metrics.registry, "REGISTRY", "copy_consistency",
        Metric("copy_consistency", copy_consistency, True, "percent", "Toy", aggregation="pooled"))
    register(COPY_KIND)
    touched.add(("KINDS", "path_eval.kinds.registry"))
    yield touched
    del KINDS[COPY_KIND.name]


def expected_copy_consistency(model, seeds: list[int]) -> float:
    """The definition on the model itself: per seed, agreeing predictions over copied positions; the
    mean over seeds."""
    options = CopyOptions(first_token=100, tokens=50)
    values = []
    for seed in seeds:
        tokens = copy_sequences(options, LENGTH, seed, 3)
        agree = count = 0
        for sequence in tokens:  # one at a time, not batched as the evaluator does
            with torch.inference_mode():
                predicted = model(torch.as_tensor(sequence[None])).logits.argmax(-1)[0].numpy()
            half = LENGTH // 2
            agree += int((predicted[half:] == predicted[:half]).sum())
            count += half
        values.append(agree / count)
    return float(np.mean(values))


def test_a_task_a_metric_and_a_kind_added_through_the_registries_run(extended, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    assert extended <= documented_registries(), "docs/extending.md names every registry a step touches"
    suite_file = tmp_path / "toy.yaml"
    suite_file.write_text(SUITE)
    random_model("path", "tiny", seed=MODEL_SEED).save_pretrained(tmp_path / "model")
    out = tmp_path / "run"
    results = evaluate(str(suite_file), [str(tmp_path / "model")], out=out, data_dir=tmp_path / "data",
                       bootstrap_iters=0)

    plan = json.loads((out / "plan.json").read_text())
    kinds = {item["task"]: item["kind"] for item in plan["items"]}
    assert kinds == {"echo": "generated", "copy": "copy"}
    records = {(r.task, r.metric): r for r in results.records}
    assert set(records) == {("echo", "string_match_all"), ("copy", "copy_consistency")}

    # the generated task: string_match_all's definition (RULER: every reference found, case-blind) on the logs
    [echo_item] = [PlannedItem.model_validate(i) for i in plan["items"] if i["task"] == "echo"]
    assert log_names(echo_item) == [f"echo_{LENGTH}_s1234"]
    rows = [json.loads(line) for line in
            (out / "samples" / "model" / f"echo_{LENGTH}_s1234.jsonl").read_text().splitlines()]
    assert [row["doc"]["outputs"] for row in rows] == [s["outputs"] for s in echo_generator(
        generated.GenerationInputs(LENGTH, None, 1234, 3))]
    matched = [np.mean([ref.lower() in row["response"][0].lower() for ref in row["doc"]["outputs"]]) for row in rows]
    assert records["echo", "string_match_all"].value == pytest.approx(np.mean(matched), abs=1e-12)
    assert records["echo", "string_match_all"].n == 3

    # the new kind: its records, its log under its row's name, its metric's direction from the registry
    copy = records["copy", "copy_consistency"]
    assert (copy.length, copy.n, copy.seeds, copy.higher_is_better) == (LENGTH, 6, 2, True)
    expected = expected_copy_consistency(random_model("path", "tiny", seed=MODEL_SEED).eval(), [1234, 1235])
    assert 0 < expected < 1 and copy.value == pytest.approx(expected, abs=1e-12)
    [copy_item] = [PlannedItem.model_validate(i) for i in plan["items"] if i["task"] == "copy"]
    assert log_names(copy_item) == [f"copy.copy@{LENGTH}"]
    assert (out / "samples" / slug("model") / f"copy.copy@{LENGTH}.jsonl").is_file()
    # the paired tests rebuild its value from that log, as its row's pairing reads it
    scores = RunSamples(out).scores(copy)
    assert not isinstance(scores, str) and scores.value() == pytest.approx(copy.value, abs=1e-12)
    # the stored suite keeps the kind's options under its key
    stored = json.loads((out / "suite.json").read_text())
    assert stored["tasks"][1]["copy"] == {"first_token": 100, "tokens": 50}

    # rescore scores the generated task again and keeps the new kind's records, which it has no scorer for
    rescored, _ = rescore(out)
    assert [r for r in rescored if r.task == "copy"] == [r for r in results.records if r.task == "copy"]
    # report's protocol check compares the kind's options with the protocol's
    ran = results.runs[0].plan
    fewer = [TaskSpec.model_validate(t.model_dump() | {"copy": {"first_token": 100, "tokens": 40}})
             if t.kind == "copy" else t for t in ran.suite.tasks]
    monkeypatch.setattr("path_eval.reports.protocol.protocol_suite", lambda plan: ran.suite)
    assert departures(ran.model_copy(update={"suite": ran.suite.model_copy(update={"tasks": fewer})})) == [
        "copy copy {'first_token': 100, 'tokens': 40} (the protocol: {'first_token': 100, 'tokens': 50})"]
    # compare's table holds its row, paired on its logs (a run against itself: no difference)
    assert main(["compare", str(out), str(out), "--format", "csv"]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("copy,")]
    assert row.startswith(f"copy,copy_consistency,{LENGTH},") and ",+0.00," in row


def test_list_and_download_read_the_new_kinds_row(extended, tmp_path, monkeypatch, capsys):
    import dataclasses

    import path_eval.data
    import path_eval.suites
    from path_eval.data import DatasetSplit

    suite_file = tmp_path / "toy.yaml"
    suite_file.write_text(SUITE)
    monkeypatch.setattr(path_eval.suites, "available_suites", lambda: [str(suite_file)])
    assert main(["list"]) == 0
    assert "  task copy (copy of 50 tokens): copy_consistency" in capsys.readouterr().out.splitlines()

    # download fetches the splits the kind's row names, at the task's lengths
    wanted = lambda task, suite, lengths: [DatasetSplit("toy/copies", f"{task.options.tokens}_{n}", "test")
                                           for n in lengths]  # noqa: E731
    fetched = []
    with pytest.MonkeyPatch.context() as patch:  # undone before the fixture unregisters the kind
        patch.setitem(KINDS, "copy", dataclasses.replace(COPY_KIND, splits=wanted))
        patch.setattr(path_eval.data, "download", lambda splits, data_dir: fetched.extend(splits) or [])
        assert main(["download", "--suite", str(suite_file), "--tasks", "copy", "--data-dir", str(tmp_path)]) == 0
    assert fetched == [DatasetSplit("toy/copies", f"50_{LENGTH}", "test")]


def test_a_suite_of_a_new_kind_is_checked_by_its_row(extended, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SUITE.replace("metrics: [copy_consistency]", "metrics: [acc]"))
    with pytest.raises(Exception, match="a copy task reports the copy_consistency metric only"):
        load_suite(str(bad))
    bad.write_text(SUITE.replace("tokens: 50", "tokens: 1"))
    with pytest.raises(Exception, match="copy.tokens"):
        load_suite(str(bad))


def test_without_its_rows_the_kind_is_unknown(tmp_path):
    suite_file = tmp_path / "toy.yaml"
    suite_file.write_text(SUITE)
    with pytest.raises(Exception, match="copy"):
        load_suite(str(suite_file))


def test_every_kind_names_its_evaluator():
    for kind in KINDS.values():  # the interface's methods (path_eval/evaluators/interface.py)
        evaluator = evaluator_of(kind)
        assert callable(evaluator.frozen_sets) and callable(evaluator.run), kind.name


def test_a_kind_whose_name_or_key_is_taken_is_refused():
    with pytest.raises(ValueError, match="clashes with the registered kind 'corpus'"):
        register(Kind(name="text", key="corpus", options=str, evaluator="x:Y", describe=str,
                      plan=COPY_KIND.plan, log_names=copy_log_names))
    assert "text" not in KINDS
