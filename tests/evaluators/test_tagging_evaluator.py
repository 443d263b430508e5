"""The A5 and MQRAR-N tasks of the harness: `eval.py run` on tiny random models of each task's
vocabulary gives the accuracies an independent computation gives (the same seeded sequences, a
direct forward, a plain loop over the labelled positions); the per-sample logs keep each sequence
and rescore to the records; a model of another vocabulary, a bad option and a length the task cannot
have are refused in one line before any model loads."""
import json

import numpy as np
import pytest
import torch

from path_eval import load_model
from path_eval.cli import main
from path_eval.metrics.tagging import UNLABELLED
from path_eval.models.random_checkpoint import random_model
from path_eval.tasks import a5, mqrar
from tests.helpers import run_cli
from training import tokenizer as symbol_tokenizers

pytestmark = pytest.mark.slow  # a CLI run on tiny models


def save_symbol_model(folder, vocabulary, seed):
    """A tiny random PaTH model whose tokenizer is the task's vocabulary, its weights spread so its
    argmax varies with the input (a model that always says one token would test little)."""
    model = random_model("path", "tiny", seed, vocab_size=len(vocabulary.symbols))
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() >= 2:
                parameter.normal_(0, 0.5)
    model.save_pretrained(folder)
    symbol_tokenizers.save(symbol_tokenizers.symbol_tokenizer(vocabulary.symbols), folder)
    return folder


def plain_loop_accuracies(model, inputs, targets):
    with torch.no_grad():
        predictions = model(torch.from_numpy(inputs)).logits.argmax(-1).numpy()
    right = labelled = 0
    whole, last = [], []
    for sequence in range(len(inputs)):
        marks = [predictions[sequence, t] == targets[sequence, t] for t in range(inputs.shape[1])
                 if targets[sequence, t] != UNLABELLED]
        right, labelled = right + sum(marks), labelled + len(marks)
        if marks:
            whole.append(all(marks))
            last.append(marks[-1])
    return {"token_accuracy": right / labelled, "sequence_accuracy": sum(whole) / len(whole),
            "final_accuracy": sum(last) / len(last)}


def write_suite(path, tasks: str):
    path.write_text(f"name: diag\ndescription: x\nsamples: 12\ntasks:\n{tasks}")
    return path


def test_a5_and_mqrar_match_an_independent_computation(tmp_path):
    a5_model = save_symbol_model(tmp_path / "a5_path_L2_s0", a5.VOCABULARY, 1)
    mqrar_model = save_symbol_model(tmp_path / "mqrar2_path_s0", mqrar.VOCABULARY, 2)
    suite = write_suite(tmp_path / "diag.yaml",
                        "  - {name: a5, a5: {form: product}, lengths: [6, 9], metrics: [token_accuracy, "
                        "sequence_accuracy, final_accuracy], models: ['a5_*']}\n"
                        "  - {name: a5_identity, a5: {form: identity}, lengths: [7], seeds: 2, metrics: "
                        "[final_accuracy], models: ['a5_*']}\n"
                        "  - {name: mqrar_2, mqrar: {n: 2, pairs: 8}, lengths: [64], metrics: [token_accuracy, "
                        "sequence_accuracy], models: ['mqrar2_*']}\n")
    out = tmp_path / "run"
    # `eval.py run` through main() in this process: the records are tested, not the command's start-up
    assert main(["run", "--suite", str(suite), "--model", str(a5_model), "--model", str(mqrar_model),
                 "--out", str(out), "--quiet"]) == 0
    records = {(r["model"], r["task"], r["length"], r["metric"]): r for r in json.loads((out / "results.json").read_text())}
    model, _ = load_model(a5_model, dtype="float32")
    for length in (6, 9):
        expected = plain_loop_accuracies(model, *a5.generate(12, length, seed=1234))
        for metric, value in expected.items():
            assert records[("a5_path_L2_s0", "a5", length, metric)]["value"] == pytest.approx(value, abs=1e-12)
    per_seed = [plain_loop_accuracies(model, *a5.generate(12, 7, "identity", seed=seed))["final_accuracy"]
                for seed in (1234, 1235)]
    record = records[("a5_path_L2_s0", "a5_identity", 7, "final_accuracy")]
    assert record["value"] == pytest.approx(np.mean(per_seed), abs=1e-12) and record["seeds"] == 2
    model, _ = load_model(mqrar_model, dtype="float32")
    expected = plain_loop_accuracies(model, *mqrar.generate(12, 64, 2, 8, seed=1234))
    for metric in ("token_accuracy", "sequence_accuracy"):
        assert records[("mqrar2_path_s0", "mqrar_2", 64, metric)]["value"] == pytest.approx(expected[metric], abs=1e-12)
    assert not any(model == "mqrar2_path_s0" and task.startswith("a5") for model, task, _, _ in records)
    rows = [json.loads(line) for line in (out / "samples" / "a5_path_L2_s0" / "a5@6.jsonl").read_text().splitlines()]
    inputs, targets = a5.generate(12, 6, seed=1234)
    assert [row["input"] for row in rows] == inputs.tolist()
    assert [row["target"] for row in rows] == targets[:, 1:].tolist() and rows[0]["positions"] == list(range(1, 7))
    rescored = run_cli("rescore", str(out), "--out", str(tmp_path / "rescored"))
    assert rescored.returncode == 0, rescored.stderr[-2000:]
    again = json.loads((tmp_path / "rescored" / "results.json").read_text())
    assert {(r["model"], r["task"], r["length"], r["metric"]): r["value"] for r in again} == \
        {key: r["value"] for key, r in records.items()}
    log = out / "samples" / "a5_path_L2_s0" / "a5_identity@7.jsonl"  # both seeds' samples in one log
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines + lines[-1:]))
    twice = run_cli("rescore", str(out), "--out", str(tmp_path / "rescored-twice"))
    assert twice.returncode == 2 and "holds sample 11 of seed 1235 twice" in twice.stderr, twice.stderr
    log.write_text("".join(lines[:-1]))
    short = run_cli("rescore", str(out), "--out", str(tmp_path / "rescored-short"))
    assert short.returncode == 2 and "holds 23 samples where the plan made 24 (sample 11 is missing)" in short.stderr


def test_models_of_another_vocabulary_options_and_lengths_are_refused_in_one_line(tmp_path):
    cases = [
        ("  - {name: a5, a5: {form: product}, lengths: [20], metrics: [token_accuracy]}\n", ["--model", "zoo:rope"],
         "error: model rope does not use the A5 vocabulary"),
        ("  - {name: m, mqrar: {n: 1}, lengths: [768], metrics: [token_accuracy]}\n", ["--model", "zoo:flipflop_path"],
         "error: model flipflop_path does not use the MQRAR-N vocabulary"),
        ("  - {name: a5, a5: {form: rotation}, lengths: [20], metrics: [token_accuracy]}\n", ["--model", "zoo:rope"],
         "a5.form"),
        ("  - {name: m, mqrar: {n: 0}, lengths: [768], metrics: [token_accuracy]}\n", ["--model", "zoo:rope"],
         "mqrar.n"),
        ("  - {name: m, mqrar: {n: 1}, lengths: [100], metrics: [token_accuracy]}\n", ["--model", "zoo:rope"],
         "error: task m: an MQRAR sequence of 32 pairs is an even number of at least 128 tokens, not 100"),
        ("  - {name: a5, a5: {form: identity}, lengths: [1], metrics: [token_accuracy]}\n", ["--model", "zoo:rope"],
         "error: task a5: an A5 identity word has at least 2 letters, not 1"),
        ("  - {name: a5, a5: {form: product}, lengths: [20], metrics: [flipflop_error]}\n", ["--model", "zoo:rope"],
         "reports the final_accuracy, sequence_accuracy, token_accuracy metrics only"),
    ]
    for index, (task, models, expected) in enumerate(cases):
        suite = write_suite(tmp_path / f"s{index}.yaml", task)
        result = run_cli("run", "--suite", str(suite), *models, "--out", str(tmp_path / f"run{index}"), "--quiet")
        assert result.returncode == 2, (task, result.stderr[-1500:])
        lines = result.stderr.strip().splitlines()
        assert expected in lines[-1] and "Traceback" not in result.stderr, (task, result.stderr[-1500:])
        assert not (tmp_path / f"run{index}" / "results.json").exists()
