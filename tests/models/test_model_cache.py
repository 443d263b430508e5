"""One full forward == chunked prefill (any chunk size) == token-by-token decode, for every variant,
and cached generation gives the tokens of a loop of full forwards."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from path_eval.models import VARIANTS
from path_eval.models.generation import generate, prefill
from path_eval.numerics import relative_error
from tests.helpers import LargestTensor, save_tiny_model, tiny_model


@pytest.mark.parametrize("variant", VARIANTS)
def test_chunked_prefill_and_decode_equal_full_forward(variant):
    model = tiny_model(variant)
    ids = torch.randint(0, 97, (2, 300), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids).logits
        for chunk in (1, 3, 64, 257):
            logits, cache = prefill(model, ids, chunk_size=chunk, logits_to_keep=0)
            assert relative_error(logits, full) <= 1e-4, chunk
            assert cache.get_seq_length() == 300


def test_chunked_prefill_gives_the_model_a_mask_only_for_chunks_with_padding(monkeypatch):
    """A chunk without padding goes to the model without a mask and one with padding says so, known
    from one read of the whole mask (the model would read each chunk's on the host, waiting for the
    chunk before); holes in any chunk, at the left or mid-row, give the full forward's logits at
    every valid position."""
    model = tiny_model("path_fox")
    ids = torch.randint(0, 97, (2, 300), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :70] = mask[1, 140:150] = 0
    with torch.no_grad():
        full = model(ids, attention_mask=mask).logits
        masked = []
        forward = model.forward

        def recording(input_ids, attention_mask=None, **kwargs):
            masked.append((attention_mask is not None, kwargs.get("mask_has_padding")))
            return forward(input_ids, attention_mask=attention_mask, **kwargs)

        monkeypatch.setattr(model, "forward", recording)
        logits, _ = prefill(model, ids, mask, chunk_size=64, logits_to_keep=0)
    assert masked == [(True, True), (True, True), (True, True), (False, False), (False, False)]
    valid = mask.bool()
    assert relative_error(logits[valid], full[valid]) <= 1e-4


def test_a_mask_said_to_hold_padding_is_not_read_and_gives_the_same_states(monkeypatch):
    """`mask_has_padding=True` skips the model's own read of the mask (a wait for the GPU), and the
    states are those the read would have led to; without it, an all-ones mask is read and found to
    be the same as none."""
    model = tiny_model("path_fox", seed=3)
    ids = torch.randint(0, 97, (2, 40), generator=torch.Generator().manual_seed(5))
    mask = torch.ones_like(ids)
    mask[0, :9] = 0
    with torch.no_grad():
        read, _ = model.hidden_states(ids, mask)
        unmasked, _ = model.hidden_states(ids)
        all_ones, _ = model.hidden_states(ids, torch.ones_like(ids))

        def no_reads(self, *args, **kwargs):
            raise AssertionError("the mask was read")

        monkeypatch.setattr(torch.Tensor, "all", no_reads)
        told, _ = model.hidden_states(ids, mask, mask_has_padding=True)
    assert torch.equal(told, read)
    assert torch.equal(all_ones, unmasked)


@pytest.mark.parametrize("variant", VARIANTS)
def test_float64_torch_backend_equals_reference_model(variant):
    model = tiny_model(variant, torch.float64)
    ids = torch.randint(0, 97, (1, 150), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model.attention_backend = "reference"
        ref = model(ids).logits
        model.attention_backend = "torch"
        assert relative_error(model(ids).logits, ref) <= 1e-12
        logits, _ = prefill(model, ids, chunk_size=7, logits_to_keep=0)
        assert relative_error(logits, ref) <= 1e-12


@pytest.mark.parametrize("variant", VARIANTS)
def test_cached_greedy_generate_equals_loop_of_full_forwards(variant):
    model = tiny_model(variant, seed=3)
    prompt = torch.randint(3, 97, (1, 40), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        loop = prompt
        for _ in range(30):
            loop = torch.cat([loop, model(loop).logits[:, -1].argmax(-1, keepdim=True)], 1)
    out = generate(model, prompt, max_new_tokens=30, eos_token_id=[], prefill_chunk_size=16)
    assert torch.equal(out, loop)
    assert torch.equal(model.generate(prompt, max_new_tokens=30, eos_token_id=[]), loop)


@pytest.mark.parametrize("variant", VARIANTS)
def test_left_padded_batch_generates_the_tokens_of_each_row_alone(variant):
    model = tiny_model(variant, seed=5)
    g = torch.Generator().manual_seed(6)
    rows = [torch.randint(3, 97, (n,), generator=g) for n in (25, 11, 18)]
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, width - len(r):], mask[i, width - len(r):] = r, 1
    batched = generate(model, ids, mask, max_new_tokens=12, eos_token_id=[])
    for i, r in enumerate(rows):
        alone = generate(model, r[None], max_new_tokens=12, eos_token_id=[])
        assert torch.equal(batched[i, width:], alone[0, len(r):])


def test_generation_stops_at_eos_and_pads():
    model = tiny_model("path", seed=7)
    prompt = torch.randint(3, 97, (1, 10), generator=torch.Generator().manual_seed(8))
    free = generate(model, prompt, max_new_tokens=20, eos_token_id=[])
    eos = int(free[0, 15])  # make the 6th generated token the end-of-sequence token
    out = generate(model, prompt, max_new_tokens=20, eos_token_id=eos, pad_token_id=0)
    first = (out[0, 10:] == eos).nonzero()[0].item()
    assert torch.equal(out[0, : 11 + first], free[0, : 11 + first])
    assert out.shape[1] == 11 + first


def test_forward_never_builds_a_T_by_T_tensor():
    """Record the largest tensor any op creates during forwards of 1024 and 4096 tokens."""
    model = tiny_model("path_fox")

    def largest(T):
        with torch.no_grad(), LargestTensor() as seen:
            model(torch.randint(0, 97, (1, T)), logits_to_keep=1)
        return seen.numel

    small, large = largest(1024), largest(4096)
    assert large <= 4.5 * small  # linear in T, where T x T logits would grow 16-fold
    assert large < 4096 * 4096 // 4


@pytest.mark.parametrize("variant", VARIANTS)
def test_triton_backend_model_agrees_with_torch_backend(variant):
    """The Triton kernels inside a whole model (interpreted on the CPU, compiled on a GPU): full
    forward, chunked prefill and decoding (pending tail, folds) all give the torch backend's logits."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = tiny_model(variant).to(device)
    ids = torch.randint(0, 97, (2, 100), generator=torch.Generator().manual_seed(3)).to(device)
    with torch.no_grad():
        full = model(ids).logits
        model.attention_backend = "triton"
        assert relative_error(model(ids).logits, full) <= 1e-4
        for chunk in (33, 64):
            logits, _ = prefill(model, ids[:, :90], chunk_size=chunk, logits_to_keep=0)
            assert relative_error(logits, full[:, :90]) <= 1e-4, chunk
        logits, cache = prefill(model, ids[:, :90], chunk_size=90, logits_to_keep=1)
        for t in range(90, 100):
            step = model(ids[:, t:t + 1], past_key_values=cache, use_cache=True).logits
            assert relative_error(step[:, -1], full[:, t]) <= 1e-4, t


def test_graph_decoding_asked_for_on_the_cpu_says_why_not():
    from path_eval.errors import PathEvalError
    model = tiny_model("path_fox", seed=9)
    prompt = torch.randint(3, 97, (1, 10), generator=torch.Generator().manual_seed(10))
    with pytest.raises(PathEvalError, match="not on a CUDA device; pass cuda_graph=False"):
        generate(model, prompt, max_new_tokens=5, eos_token_id=[], cuda_graph=True)
    assert generate(model, prompt, max_new_tokens=5, eos_token_id=[]).shape == (1, 15)


def test_the_decoding_path_a_run_records_is_the_one_generate_takes(monkeypatch, tmp_path):
    """A run's provenance says how generate_until decoded ("eager" or "cuda graph": they round
    differently in 16-bit), the same rule `generate` applies by default; a model that is not ours
    decodes through transformers' generate and records None."""
    import types

    from path_eval.models import decode_graph, modeling
    from path_eval.models.identity import model_identity

    model = tiny_model("path", seed=9)
    assert model.decoding_path == "eager" and decode_graph.graph_decoding(model, None) is False
    monkeypatch.setattr(modeling, "graph_unavailable", lambda m: None)  # as on a CUDA device with the triton backend
    assert model.decoding_path == "cuda graph"
    monkeypatch.undo()
    checkpoint = save_tiny_model(tmp_path / "ckpt")
    fake = types.SimpleNamespace(model=types.SimpleNamespace(config=None), tokenizer=types.SimpleNamespace(name_or_path="t"),
                                 max_length=8, precision="float32")
    assert model_identity(checkpoint, fake, "cpu", "h")["decoding"] is None
    fake.model = model
    assert model_identity(checkpoint, fake, "cpu", "h")["decoding"] == "eager"


@pytest.mark.parametrize("variant", ["path", "path_fox"])
def test_scoring_without_use_cache_leaves_the_cache_as_it_was(variant):
    """Two continuations scored from one prefix cache with use_cache=False: each gives the logits of
    a full forward (the short-conv history of the prefix is read, not overwritten)."""
    model = tiny_model(variant, seed=11)
    g = torch.Generator().manual_seed(12)
    prefix, a, b = (torch.randint(3, 97, (2, n), generator=g) for n in (40, 7, 9))
    with torch.no_grad():
        _, cache = prefill(model, prefix)
        for continuation in (a, b, a):
            scored = model(continuation, past_key_values=cache, use_cache=False).logits
            full = model(torch.cat([prefix, continuation], 1)).logits[:, 40:]
            assert relative_error(scored, full) <= 1e-4


def test_generation_imports_and_runs_without_triton():
    """triton is optional (absent on some machines): generation on the torch backend must not import it."""
    code = ("import sys; sys.modules['triton'] = None\n"
            "import torch\n"
            "from path_eval.models.generation import generate\n"
            "from tests.helpers import tiny_model\n"
            "out = generate(tiny_model('path_fox'), torch.randint(3, 97, (1, 8)), max_new_tokens=4, eos_token_id=[])\n"
            "assert out.shape == (1, 12), out.shape\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("late", [False, True])
def test_stop_strings_are_read_every_few_steps_and_the_ids_end_where_every_row_finished(late, monkeypatch):
    """The host reads the new tokens (should_stop) every STOP_CHECK_EVERY steps only; with late looks
    (a GPU's greedy decoding) a window's tokens only once the next window's steps are queued, so that
    the GPU decodes while the host decodes text. The tokens up to the look are those of a free
    generation, and none follows the look that finished every row."""
    from path_eval.models import generation
    from path_eval.models.generation import STOP_CHECK_EVERY

    monkeypatch.setattr(generation, "late_looks", lambda device, do_sample: late)
    model = tiny_model("path", seed=7)
    prompt = torch.randint(3, 97, (2, 10), generator=torch.Generator().manual_seed(8))
    free = generate(model, prompt, max_new_tokens=30, eos_token_id=[])
    steps, looks = [], []
    model.register_forward_hook(lambda module, args, out: steps.append(args[0].shape[1]))

    def after_five(new):
        looks.append((new.shape[1], len(steps)))
        return torch.full((new.shape[0],), new.shape[1] >= 5)

    out = generate(model, prompt, max_new_tokens=30, eos_token_id=[], should_stop=after_five)
    assert STOP_CHECK_EVERY == 8
    # the prefill, then the steps choosing tokens 1..7 (one window) or 1..15 (two windows queued)
    assert looks == [(8, 1 + (15 if late else 7))]
    assert torch.equal(out, free[:, :10 + 8])


def test_looks_are_late_on_a_gpu_and_greedy_only():
    from path_eval.models.generation import late_looks
    assert late_looks(torch.device("cuda", 1), do_sample=False)
    assert not late_looks(torch.device("cuda"), do_sample=True)  # an extra window would draw from the generator
    assert not late_looks(torch.device("cpu"), do_sample=False)  # nothing runs beside the host to overlap


def _batch(seed: int):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 97, (4, 21), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :6] = mask[3, :13] = 0
    return ids, mask


class _ReplayedEagerly:
    """A stand-in for `decode_graph.CapturedDecodeStep` on the CPU: each call runs what the graph
    records (the model's step on its `token` buffer, then `then`), eagerly, so the order in which
    `generate` replays and reads the graph's buffers is checked where no GPU is."""

    def __init__(self, model, cache, tokens, *, token=None, then=None, shared_pool=False):
        self.model, self.cache, self.token, self.then, self.remaining = model, cache, token, then, tokens

    def __call__(self):
        assert self.remaining > 0
        self.remaining -= 1
        logits = self.model(self.token[:, None], past_key_values=self.cache, use_cache=True).logits
        if self.then is not None:
            self.then(logits)
        return logits


@pytest.mark.parametrize("max_new", [1, 2, 3, 8, 9, 16, 23, 24])
@pytest.mark.parametrize("ending", ["none", "eos", "stop_strings", "both"])
@pytest.mark.parametrize("sampling", [False, True])
@pytest.mark.parametrize("replayed", [False, True])
@pytest.mark.parametrize("late", [False, True])
def test_generate_gives_the_reference_loops_tokens(max_new, ending, sampling, replayed, late, monkeypatch):
    """`generate` (its choices written in place into buffers, for a CUDA graph to record) against the
    decoding loop as first written (tests/models/generation_reference.py) on a left-padded batch:
    greedy and sampled, rows ending by an end token chosen mid-way, by `should_stop` at a look, by
    both, or never; exactly the same ids, and `should_stop` asked the same tokens (finished rows
    padded), eagerly and through the graph's sequence of calls (`replayed`: the GPU tests compare
    the graph itself), with looks read at once and one window late (`late`, a GPU's greedy way)."""
    from path_eval.models import generation
    from tests.models.generation_reference import reference_generate

    monkeypatch.setattr(generation, "late_looks", lambda device, do_sample: late)
    if replayed:
        monkeypatch.setattr(generation, "graph_decoding", lambda model, asked: True)
        monkeypatch.setattr(generation, "CapturedDecodeStep", _ReplayedEagerly)
    model = tiny_model("path_fox", seed=9)
    ids, mask = _batch(10)
    free = generate(model, ids, mask, max_new_tokens=max_new, eos_token_id=[], pad_token_id=0)
    ends = {int(free[0, 21 + min(3, max_new - 1)]), int(free[2, 21 + min(10, max_new - 1)])}
    eos = sorted(ends) if ending in ("eos", "both") else []

    asked = []

    def rows_past_five(new):  # rows 1 and 3 stop once they hold six tokens
        asked.append(new.clone())
        return torch.tensor([False, new.shape[1] >= 6, False, new.shape[1] >= 6])

    def stop_all(new):  # every row, at the first look
        asked.append(new.clone())
        return torch.ones(new.shape[0], dtype=torch.bool)

    should_stop = {"stop_strings": stop_all, "both": rows_past_five}.get(ending)
    options = dict(max_new_tokens=max_new, eos_token_id=eos, pad_token_id=0, should_stop=should_stop,
                   do_sample=sampling, temperature=0.7, top_k=20 if sampling else None, prefill_chunk_size=8)
    ours = generate(model, ids, mask, generator=torch.Generator().manual_seed(1), **options)
    ours_asked, asked = asked, []
    expected = reference_generate(model, ids, mask, generator=torch.Generator().manual_seed(1), **options)
    assert torch.equal(ours, expected)
    assert len(ours_asked) == len(asked) and all(torch.equal(a, b) for a, b in zip(ours_asked, asked))
