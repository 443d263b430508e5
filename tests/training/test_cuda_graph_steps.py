"""A5's and MQRAR-N's training steps replayed from CUDA graphs (`train.py --cuda-graphs`) against eager steps from
the same weights and batches, on a GPU: the graphs must capture (the step mode says so) and give the
eager losses, step after step, within bf16 autocast's rounding."""
import copy
import importlib.util
from types import SimpleNamespace

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("task_name,variant", [("a5", "rope"), ("a5", "path"), ("mqrar", "rope"),
                                               ("mqrar", "path_fox")])
def test_replayed_steps_give_the_eager_losses(task_name, variant):
    if variant != "rope" and importlib.util.find_spec("fla") is None:
        pytest.skip("fla's classes are not installed")
    from training import tagging
    from training.train import SHAPES, build_model, labelled_loss, step_loss

    # MQRAR-2 at the paper's shape: its labelled positions differ from batch to batch (padded)
    task = tagging.a5_task(20, "product") if task_name == "a5" else tagging.mqrar_task(2, 768, 32)
    bos, eos, pad = task.special_ids()
    torch.manual_seed(0)
    model = build_model(variant, len(task.vocabulary.symbols), **SHAPES[task_name], bos=bos, eos=eos,
                        pad=pad).cuda().train()
    twin = copy.deepcopy(model)
    batches = list(tagging.batches(task, 64, 6, 0, "cuda"))
    args = SimpleNamespace(cuda_graphs=True, device="cuda")
    replay, mode = step_loss(model, args, task, *batches[0])
    assert mode == "cuda graphs", mode
    losses = {}
    for name, net, loss_of in (("graphs", model, replay), ("eager", twin, lambda x, y: labelled_loss(twin, x, y))):
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
        losses[name] = []
        for inputs, targets in batches:
            loss = loss_of(inputs, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses[name].append(loss.detach().clone().item())
    print(variant, losses)
    assert losses["graphs"] == pytest.approx(losses["eager"], rel=2e-3)
    assert len(set(losses["graphs"])) == len(batches)  # each replay's own loss, not the last one repeated
