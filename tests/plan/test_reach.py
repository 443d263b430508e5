"""Lengths a run cannot reach (path_eval/plan/reach.py): the memory bound against a hand count and
against the tensor memory a real scoring allocates, and the refusals, before torch imports."""
from __future__ import annotations

import weakref

import pytest

from path_eval.errors import PathEvalError
from path_eval.models.zoo import zoo_models
from path_eval.plan import resolve_plan
from path_eval.plan.reach import (SAMPLE_BYTES, ModelShape, check_index_width, check_memory, check_reach,
                                  cpu_available_memory, largest_reachable, memory_bound)
from path_eval.suites import load_suite
from tests.cli.test_early_checks import run_main


def shape_of(name: str) -> ModelShape:
    from path_eval.models.config_file import read_config

    return ModelShape.of(read_config(zoo_models(name)[0] / "config.json"))


def plan_at(model: str, length: int, tmp_path):
    return resolve_plan(load_suite("ruler"), [f"zoo:{model}"], tasks=["niah_single_1"], lengths=[str(length)],
                        data_dir=tmp_path)


def test_the_bound_of_zoo_path_is_the_hand_count():
    """zoo:path (an fla path_attn config): hidden 192, 4 layers, 3 heads of 64, no kv heads stated
    (so 3), vocabulary 4096, tied, intermediate_size null (the MLP left out)."""
    weights = 4096 * 192 + 4 * (192 * 192 * 4)  # embedding; q, k, v, o per layer
    cache_per_token = 2 * 4 * 192  # keys and values of every layer
    tokens = 20_000  # held: two chunks of 8192; the third, last chunk is left out
    expected = weights * 4 + 2 * 8192 * (2 * 8 + cache_per_token * 4)
    assert memory_bound(shape_of("path"), tokens, 4, 4, one_pass=False) == expected
    # on a GPU the Triton backend may score in one pass: embedding, its norm, q, k, v per token if smaller
    one_pass = 2 * 192 + 3 * 64 * 3
    assert memory_bound(shape_of("path"), tokens, 2, 2, one_pass=True) == weights * 2 + 2 * 8192 * (16 + one_pass * 2)


def test_a_transformers_config_counts_its_layers_and_its_residual_stream():
    """zoo:rope is a llama checkpoint (hidden 192, 4 layers, 3 heads of 64, 3 kv heads, MLP 512, a
    tied vocabulary of 4096): its embedding, each layer's q, k, v, o and two MLP matrices; one forward
    of its base model holds tokens x hidden."""
    shape = shape_of("rope")
    weights = 4096 * 192 + 4 * (4 * 192 * 3 * 64 + 2 * 192 * 512)
    assert not shape.own_family and shape.weights() == weights
    assert memory_bound(shape, 3 * 8192, 4, 4, one_pass=False) == weights * 4 + 2 * 8192 * (16 + 192 * 4)


def test_the_largest_reachable_length_is_the_last_that_fits():
    shape = shape_of("path")
    available = memory_bound(shape, 10 * 8192, 4, 4, False)
    most = largest_reachable(shape, available, 4, 4, False)
    assert memory_bound(shape, most, 4, 4, False) <= available < memory_bound(shape, most + 1, 4, 4, False)
    assert largest_reachable(shape, memory_bound(shape, 0, 4, 4, False) - 1, 4, 4, False) is None


class LiveTensorMemory:
    """Bytes of tensor storage allocated under it and still alive, and their peak: every op's output
    storage counted once, until it is freed. Independent of the bound: it sees what torch allocates."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        tracker = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                tracker.record(out)
                return out

        self.mode, self.seen, self.live, self.peak = Mode(), set(), 0, 0

    def record(self, out):
        import torch
        from torch.utils._pytree import tree_leaves

        for tensor in tree_leaves(out):
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            if key in self.seen or storage.nbytes() == 0:
                continue
            self.seen.add(key)
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self.free, key, storage.nbytes())

    def free(self, key, size):
        self.seen.discard(key)
        self.live -= size


@pytest.mark.parametrize("name", ["flipflop_path", "flipflop_fox", "flipflop_path_fox", "flipflop_rope"])
def test_the_bound_is_below_what_a_real_scoring_allocates(name):
    """A 2000-token block scored on the CPU in chunks of 64 (flipflop_rope, a llama: one transformers
    forward), by models of an 8-token vocabulary, so that the logits do not hide the sequence terms:
    the bound's weights are at most the model's, and its sequence terms at most the peak of the
    tensors allocated while scoring."""
    import torch

    from path_eval.lm.scoring import next_token_nll
    from path_eval.models.loading import load_network

    torch.manual_seed(0)
    model = load_network(zoo_models(name)[0], device="cpu", dtype="float32", attention=None)
    block = torch.randint(0, 8, (2000,)).tolist()
    memory = LiveTensorMemory()
    with memory.mode:
        next_token_nll(model, block, prefill_chunk=64)
    shape = shape_of(name)
    weights = shape.weights() * 4
    sequence = memory_bound(shape, len(block), 4, 4, one_pass=False, chunk=64) - weights
    assert weights <= sum(p.numel() * p.element_size() for p in model.parameters())
    assert 1984 * 16 < sequence <= memory.peak  # 1984: the tokens before the last chunk of 64


def test_a_length_past_the_memory_is_refused_with_both_figures_and_the_largest_that_fits(tmp_path):
    plan = plan_at("path", 1_000_000, tmp_path)
    available = memory_bound(shape_of("path"), 500_001, 4, 4, False)
    with pytest.raises(PathEvalError) as refused:
        check_memory(plan, "cpu", None, None, available, "available")
    message = str(refused.value)
    most = largest_reachable(shape_of("path"), available, 4, 4, False) - 1  # a generated sample reads BOS too
    need = memory_bound(shape_of("path"), 1_000_001, 4, 4, False)
    assert f"{need / 2**30:.2f} GiB" in message and f"{available / 2**30:.2f} GiB" in message
    assert f"at most {most}," in message and "--lengths" in message
    check_memory(plan_at("path", most, tmp_path), "cpu", None, None, available, "available")
    with pytest.raises(PathEvalError, match="weights alone"):
        check_memory(plan, "cpu", None, None, 1000, "available")


def test_a_normal_length_passes_the_checks(tmp_path):
    check_reach(plan_at("path", 4096, tmp_path), "cpu")
    check_reach(plan_at("rope", 4096, tmp_path), "cpu")


def test_the_triton_kernels_refuse_samples_past_int32_token_counts(tmp_path):
    plan = plan_at("path", 2**31 - 1, tmp_path)  # 2**31 tokens with BOS
    with pytest.raises(PathEvalError, match="int32"):
        check_index_width(plan, "cuda", None)
    with pytest.raises(PathEvalError, match="int32"):
        check_index_width(plan, "cpu", "triton")
    check_index_width(plan, "cpu", None)  # the torch backend indexes in int64
    check_index_width(plan_at("path", 2**31 - 2, tmp_path), "cuda", None)


def test_an_absurd_length_is_refused_before_torch_imports(tmp_path):
    if memory_bound(shape_of("rope"), 100_000_000, 4, 4, False) <= cpu_available_memory()[0]:
        pytest.skip("this machine's memory could hold the bound")
    code, lines, imported = run_main(["run", "--suite", "ruler", "--model", "zoo:rope", "--tasks", "niah_single_1",
                                      "--lengths", "99999999", "--data-dir", str(tmp_path),
                                      "--out", str(tmp_path / "out")])
    assert code == 2
    [line] = lines
    assert line.startswith("error: model rope needs at least") and "at most" in line
    assert imported == []
    assert not (tmp_path / "out").exists()


def test_a_generation_past_the_memory_is_refused_before_torch_imports():
    new_tokens = 10**12
    assert memory_bound(shape_of("path"), new_tokens + 1, 4, 4, False) > cpu_available_memory()[0]
    code, lines, imported = run_main(["generate", "--model", "zoo:path", "--prompt", "a", "--max-new-tokens",
                                      str(new_tokens)])
    assert code == 2
    [line] = lines
    assert line.startswith("error: model zoo:path needs at least") and f"generate {new_tokens} tokens" in line
    assert "--max-new-tokens of at most" in line
    assert imported == []


def test_a_sample_count_no_host_holds_is_refused_before_torch_imports(tmp_path):
    """A Python dict a sample at the least: a count past the host's memory would generate until killed."""
    count = 10**30
    assert count * SAMPLE_BYTES > cpu_available_memory()[0]
    suite = tmp_path / "many.yaml"
    suite.write_text("name: many\ndescription: a count no host holds\n"
                     f"samples: {count}\ntasks:\n- name: niah\n  generator: ruler/niah_single_1\n"
                     "  lengths: [1k]\n  metrics: [string_match_all]\n")
    code, lines, imported = run_main(["run", "--suite", str(suite), "--model", "zoo:path", "--data-dir", str(tmp_path),
                                      "--out", str(tmp_path / "out")])
    assert code == 2
    [line] = lines
    assert line.startswith(f"error: task niah makes {count} samples per seed") and "at most" in line
    assert imported == []
    assert not (tmp_path / "out").exists()
    check_reach(resolve_plan(load_suite(str(suite)), ["zoo:path"], limit=3, data_dir=tmp_path), "cpu")  # --limit 3
