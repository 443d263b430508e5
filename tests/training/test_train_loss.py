"""The training loss at labelled positions against its definition (cross-entropy over the full
logits, ignore_index -100), and the pinned autotuner's choice against the rule written out by hand."""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F

triton = pytest.importorskip("triton")

from path_eval.errors import PathEvalError  # noqa: E402
from training.autotune import pin_autotuning, pinned_config  # noqa: E402
from training.train import build_model, labelled_loss  # noqa: E402


def test_labelled_loss_and_its_gradients_equal_full_logits_cross_entropy():
    torch.manual_seed(0)
    model = build_model("rope", 50, layers=2, hidden=64, heads=2, bos=1, eos=2, pad=0).double()
    inputs = torch.randint(3, 50, (3, 17))
    targets = torch.randint(3, 50, (3, 17)).masked_fill(torch.rand(3, 17) < 0.6, -100)
    loss = labelled_loss(model, inputs, targets)
    loss.backward()
    ours = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    logits = model(input_ids=inputs, use_cache=False).logits
    reference = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    reference.backward()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-12)
    for got, want in zip(ours, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def configs(**lists):
    """triton.Configs over every combination, in the order fla's decorators list them."""
    import itertools

    warps, stages = lists.pop("num_warps", [4]), lists.pop("num_stages", [3])
    names = list(lists)
    return [triton.Config(dict(zip(names, values)), num_warps=w, num_stages=s)
            for values in itertools.product(*lists.values()) for w in warps for s in stages]


@pytest.mark.parametrize("lists, expected", [
    ({"num_warps": [1, 2, 4, 8], "num_stages": [2, 3, 4, 5]}, ({}, 4, 2)),
    ({"BK": [32, 64, 128], "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]}, ({"BK": 64}, 4, 2)),
    ({"BT": [32, 64, 128, 256], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3, 4]}, ({"BT": 64}, 4, 2)),
    ({"BD": [16, 32, 64, 128], "num_warps": [8, 16, 32]}, ({"BD": 64}, 8, 3)),
    ({"DOT_PRECISION": ["ieee", "tf32"], "num_warps": [1, 2, 4, 8], "num_stages": [2, 3]},
     ({"DOT_PRECISION": "ieee"}, 4, 2)),
])
def test_the_pinned_config_is_the_nearest_the_middle_and_the_first_on_ties(lists, expected):
    chosen = pinned_config(configs(**lists))
    assert (chosen.kwargs, chosen.num_warps, chosen.num_stages) == expected


def test_pinned_autotuners_keep_one_config_and_pinning_is_once_per_process(monkeypatch):
    """A worker trains several models in one process, pinning before each: only a first pinning after
    fla's import is refused (fla's autotuners would keep every configuration)."""
    from triton.runtime.autotuner import Autotuner

    monkeypatch.setattr(Autotuner, "__init__", Autotuner.__init__)  # restored after the test
    monkeypatch.setitem(sys.modules, "fla", object())
    with pytest.raises(PathEvalError, match="before the first import of fla"):
        pin_autotuning()
    monkeypatch.delitem(sys.modules, "fla")
    pin_autotuning()

    @triton.autotune(configs=configs(BT=[32, 64], num_warps=[2, 4], num_stages=[1, 2]), key=["n"])
    @triton.jit
    def kernel(x, n, BT: triton.language.constexpr):
        pass

    assert [(c.kwargs, c.num_warps, c.num_stages) for c in kernel.configs] == [({"BT": 64}, 4, 2)]
    monkeypatch.setitem(sys.modules, "fla", object())  # as after the first model's import of fla
    pin_autotuning()


@pytest.mark.parametrize("task_name", ["a5", "mqrar"])
def test_the_padded_positions_loss_equals_the_labelled_loss_and_its_gradients(task_name):
    """The CUDA-graph step's loss (labelled positions padded to the task's bound: static shapes)
    against `labelled_loss` (the batch's own positions), float64 on the CPU: the same value and
    gradients. MQRAR-2's keys are few and its padding long; A5 labels every letter, no padding."""
    from training import tagging
    from training.train import PositionsLoss, padded_positions

    task = tagging.a5_task(9, "product") if task_name == "a5" else tagging.mqrar_task(2, 64, 8)
    bos, eos, pad = task.special_ids()
    torch.manual_seed(1)
    model = build_model("rope", len(task.vocabulary.symbols), layers=2, hidden=64, heads=2, bos=bos, eos=eos,
                        pad=pad).double()
    inputs, targets = (torch.from_numpy(t) for t in task.generate(6, seed=3))
    positions, labels = padded_positions(targets, 6 * task.labels_per_sequence)
    labelled = int((targets != -100).sum())
    assert len(positions) == 6 * task.labels_per_sequence
    assert (labelled == len(positions)) == (task_name == "a5")  # A5: every letter, not BOS; MQRAR: padded
    assert (labels[labelled:] == -100).all() and (positions[labelled:] == 0).all()
    assert (labels[:labelled] == targets.flatten()[targets.flatten() != -100]).all()
    loss = PositionsLoss(model)(inputs, positions, labels)
    loss.backward()
    ours = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    reference = labelled_loss(model, inputs, targets)
    reference.backward()
    assert loss.item() == pytest.approx(reference.item(), rel=1e-12)
    for got, want in zip(ours, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [lambda t: t.a5_task(20, "product"), lambda t: t.a5_task(20, "identity"),
                                  *(lambda t, n=n: t.mqrar_task(n, 768, 32) for n in (1, 2, 3, 4))])
def test_no_sequence_has_more_labels_than_its_tasks_bound(make):
    """`padded_positions` drops labels past the bound without a word, so the bound must hold for
    every sequence the generators draw: 10,000 of each task here."""
    from training import tagging

    task = make(tagging)
    _, targets = task.generate(10_000, seed=5)
    counts = (targets != -100).sum(axis=1)
    assert counts.max() <= task.labels_per_sequence
