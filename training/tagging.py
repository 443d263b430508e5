"""The token-tagging diagnostics (the A5 word problem, MQRAR-N) as `train.py` trains them: the task's
options, its vocabulary, fresh sequences every step from the harness's own generators (so a model
is trained on exactly the law it is evaluated on), the loss over labelled positions only, and the
held-out accuracies (token, sequence, final) on a fixed set drawn from seeds no training step uses.

Departures from the originals' recipes, the same for every variant: each step draws its batch
afresh (Merrill et al. split 1M fixed words 80/20 and train up to 500 epochs; MQRAR trains 64 epochs
of 100,000 fixed sequences), and the budget is a fixed number of steps with the zoo's optimizer and
schedule rather than training to 99% validation accuracy (an early stop would give each variant a
different budget)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from path_eval.metrics.tagging import accuracy_and_stderr, sequence_counts
from path_eval.tasks import a5, mqrar
from path_eval.tasks.symbols import SymbolVocabulary

EVAL_SEED, FINAL_EVAL_SEED = 10_001, 20_001  # the seeds a run's own evaluation draws from start at 1234
METRICS = ("token_accuracy", "sequence_accuracy", "final_accuracy")
LOGITS_PER_FORWARD = 2**28  # float32 logits of one held-out forward (1 GiB): MQRAR's 8194 ids at 768 tokens


@dataclass(frozen=True)
class TaggingTask:
    """One diagnostic at its training setting: `generate(count, seed)` -> (inputs, targets)."""

    name: str
    vocabulary: SymbolVocabulary
    options: dict
    tokens: int  # per sequence
    labels_per_sequence: int  # at most: A5 labels every letter, MQRAR-N only keys (2 per pair)

    def generate(self, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        if self.name == "a5":
            return a5.generate(count, self.options["length"], self.options["form"], seed=seed)
        return mqrar.generate(count, self.options["length"], self.options["n"], self.options["pairs"], seed=seed)

    def special_ids(self) -> tuple[int, int, int]:
        """(bos, eos, pad) ids for the model's config."""
        return tuple(self.vocabulary.symbols.index(s) for s in ("<s>", "</s>", "<pad>"))


def a5_task(length: int, form: str) -> TaggingTask:
    return TaggingTask("a5", a5.VOCABULARY, {"length": length, "form": form}, length + 1, length)


def mqrar_task(n: int, length: int, pairs: int) -> TaggingTask:
    mqrar.check_length(length, pairs)
    return TaggingTask("mqrar", mqrar.VOCABULARY, {"n": n, "length": length, "pairs": pairs}, length,
                       2 * pairs)


def step_seed(seed: int, step: int) -> int:
    return 1_000_000 * (seed + 1) + step


def batches(task: TaggingTask, batch: int, steps: int, seed: int, device: str, first: int = 0):
    """Steps `first` to `steps` - 1, each drawn from its own seed (so a resumed run sees the same)."""
    import torch

    for step in range(first, steps):
        inputs, targets = task.generate(batch, step_seed(seed, step))
        yield (torch.from_numpy(inputs).to(device, non_blocking=True),
               torch.from_numpy(targets).to(device, non_blocking=True))


def accuracies(model, task: TaggingTask, count: int, seed: int, logits_of) -> dict:
    """Token, sequence and final accuracy (with their standard errors) on `count` sequences drawn
    from `seed`, the model's argmax at every position (`logits_of(model, ids)`)."""
    import torch

    model.eval()
    counts = []
    chunk = max(1, min(256, LOGITS_PER_FORWARD // (task.tokens * len(task.vocabulary.symbols))))
    with torch.no_grad():
        for start in range(0, count, chunk):
            inputs, targets = task.generate(min(chunk, count - start), seed + start)
            device = next(model.parameters()).device
            predictions = logits_of(model, torch.from_numpy(inputs).to(device)).argmax(-1).cpu().numpy()
            counts.append(sequence_counts(targets, predictions))
    model.train()
    counts = np.concatenate(counts)
    result = {"sequences": count, "labelled": int(counts[:, 1].sum())}
    for metric in METRICS:
        value, stderr = accuracy_and_stderr(counts, metric)
        result |= {metric: value, f"{metric}_stderr": stderr}
    return result

