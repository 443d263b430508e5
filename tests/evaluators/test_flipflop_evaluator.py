"""Flip-flop as a task of the harness: `eval.py run --suite ci` on a zoo flip-flop model gives the
error an independent computation gives (the same seeded sequences, a direct forward, a plain loop
over the reads); the sequences are frozen; a model of another vocabulary is refused in one line."""
import json

import numpy as np
import pytest
import torch

from path_eval import load_model
from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.models.zoo import zoo_models
from path_eval.tasks import flipflop
from path_eval.tasks.frozen import frozen_rows
from tests.helpers import run_cli

READ, ZERO = flipflop.READ, flipflop.ZERO


def plain_loop_error(model, sequences: np.ndarray) -> float:
    wrong = reads = 0
    with torch.no_grad():
        logits = model(torch.from_numpy(sequences)).logits
    for n, sequence in enumerate(sequences):
        for t in range(1, len(sequence)):
            if sequence[t - 1] == READ:
                reads += 1
                wrong += int(logits[n, t - 1].argmax()) != int(sequence[t])
    return wrong / reads


def test_task_matches_an_independent_computation_on_a_zoo_model(tmp_path):
    # `eval.py run` through main() in this process: the records are tested, not the command's start-up
    assert main(["run", "--suite", "ci", "--model", "zoo:flipflop_fox", "--tasks", "flipflop_in,flipflop_sparse",
                 "--limit", "24", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    records = {r["task"]: r for r in json.loads((tmp_path / "run" / "results.json").read_text())}
    model, _ = load_model(zoo_models("flipflop_fox")[0], dtype="float32")
    for task, p_ignore in (("flipflop_in", 0.8), ("flipflop_sparse", 0.98)):
        expected = plain_loop_error(model, flipflop.generate(24, p_ignore, length=512, seed=1234))
        assert records[task]["value"] == expected and not records[task]["higher_is_better"]
        assert records[task]["n"] == 24
    assert 0 < records["flipflop_in"]["value"] < records["flipflop_sparse"]["value"]  # FoX: 9% / 36% (phase 1)
    log = [json.loads(line) for line in (tmp_path / "run" / "samples" / "flipflop_fox" / "flipflop_in@512.jsonl")
           .read_text().splitlines()]
    assert len(log) == 24 and sum(r["wrong"] for r in log) / sum(r["reads"] for r in log) == records["flipflop_in"]["value"]


def test_sequences_are_frozen_and_seeded(tmp_path):
    path, first = flipflop.frozen_sequences("t", 0.8, 64, 7, 5, root=tmp_path)
    assert np.array_equal(first, flipflop.generate(5, 0.8, length=64, seed=7))
    assert np.array_equal(flipflop.frozen_sequences("t", 0.8, 64, 7, 5, root=tmp_path)[1], first)
    assert flipflop.frozen_sequences("t", 0.8, 64, 8, 5, root=tmp_path)[0] != path  # another seed, another set


def test_a_set_is_parsed_once_a_process_for_each_content(tmp_path, monkeypatch):
    """Every flip-flop model reads the same sets: the second read takes the parsed sequences (a copy,
    so a caller cannot change them for the next). They are kept by the file's hash: an edited set is
    frozen again, byte for byte the same, and keeps them."""
    parsed = []
    monkeypatch.setattr(flipflop, "frozen_rows", lambda path, **check: parsed.append(path) or frozen_rows(path, **check))
    path, first = flipflop.frozen_sequences("once", 0.8, 64, 3, 4, root=tmp_path)
    first[0, 0] = -1
    path_again, again = flipflop.frozen_sequences("once", 0.8, 64, 3, 4, root=tmp_path)
    assert path_again == path and parsed == [path]
    assert again.dtype == np.int64 and np.array_equal(again, flipflop.generate(4, 0.8, length=64, seed=3))
    path.write_text(path.read_text().replace("[", "[ ", 1))  # no longer its key's: frozen again
    _, regenerated = flipflop.frozen_sequences("once", 0.8, 64, 3, 4, root=tmp_path)
    assert parsed == [path] and np.array_equal(regenerated, again)


def test_a_set_changed_between_its_check_and_its_read_is_never_kept(tmp_path, monkeypatch):
    """The parse checks the bytes it reads against the hash `freeze` checked: a set rewritten in
    between (another process) is one line, and nothing is kept under the hash."""
    path, first = flipflop.frozen_sequences("race", 0.8, 64, 3, 4, root=tmp_path)
    flipflop._parsed.cache_clear()
    own = flipflop.stored_sha256

    def rewritten_meanwhile(samples):
        digest = own(samples)
        samples.write_text(samples.read_text().replace("[", "[ ", 1))
        return digest
    monkeypatch.setattr(flipflop, "stored_sha256", rewritten_meanwhile)
    with pytest.raises(PathEvalError, match="changed while being read"):
        flipflop.frozen_sequences("race", 0.8, 64, 3, 4, root=tmp_path)
    monkeypatch.setattr(flipflop, "stored_sha256", own)
    assert np.array_equal(flipflop.frozen_sequences("race", 0.8, 64, 3, 4, root=tmp_path)[1], first)


def test_a_model_of_another_vocabulary_is_refused(tmp_path):
    suite = tmp_path / "ff.yaml"
    suite.write_text("name: ff\ndescription: x\ntasks:\n  - {name: ff, flipflop: {p_ignore: 0.8}, lengths: [64], "
                     "samples: 2, metrics: [flipflop_error]}\n")
    result = run_cli("run", "--suite", str(suite), "--model", "zoo:rope", "--out", str(tmp_path / "run"), "--quiet")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: model rope does not use the flip-flop vocabulary")
