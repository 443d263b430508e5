"""Real shapes on a GPU (skipped without one): the bf16 kernels against the float32 torch backend
(itself equal to the float64 definition to 1e-5 in tests/models), T up to 64K; and a whole model's
full forward, chunked prefill (several chunk sizes) and decoding against each other."""
import pytest
import torch
import torch.nn.functional as F

from path_eval.kernels.path_attn.fwd import path_attention
from path_eval.models.attention import AttentionInputs, torch_backend
from path_eval.numerics import relative_error
from tests.helpers import tiny_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("variant", ["path", "path_fox", "fox"])
@pytest.mark.parametrize("T", [4096, 16384, 65536])
@pytest.mark.parametrize("D,HQ,H", [(64, 4, 2), (128, 2, 2)])
def test_real_shapes_against_float32_torch_backend(variant, T, D, HQ, H):
    g = torch.Generator(device="cuda").manual_seed(T + D)
    r = lambda *s: torch.randn(*s, generator=g, device="cuda")  # noqa: E731
    q, k, v = r(1, T, HQ, D), r(1, T, H, D), r(1, T, H, D)
    w = beta = gates = None
    if variant != "fox":
        w, beta = F.normalize(r(1, T, H, D), dim=-1), 2 * torch.sigmoid(2 * r(1, T, H))
    if variant != "path":
        gates = F.logsigmoid(r(1, T, HQ) + 4)
    gate_scale = D ** -0.5 if variant == "path_fox" else 1.0
    ref = torch_backend.attend(AttentionInputs(q, k, v, D ** -0.5, w, beta, gates, gate_scale, None), None, False)[0]
    out, _ = path_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), scale=D ** -0.5, w=w, beta=beta, g=gates,
                            gate_scale=gate_scale)
    err = relative_error(out, ref)
    print(f"{variant} T={T} D={D}: rel err {err:.2e}, max abs {(out.float() - ref).abs().max().item():.2e}")
    assert err <= 2e-2


@pytest.mark.parametrize("variant", ["path", "path_fox"])
@pytest.mark.parametrize("D,HQ,H", [(64, 4, 2), (128, 2, 2)])
def test_coarse_walk_keeps_the_fine_walks_accuracy(variant, D, HQ, H):
    """bf16 at 16K tokens against the float32 torch backend: the coarse walk over super-chunks of 2, 4,
    8 and 16 chunks (keys and U_super rounded to bf16 once, r rounded once per super-chunk) within
    1.25x the error of the walk over every chunk, and within the real-shape bound."""
    T = 16384
    g = torch.Generator(device="cuda").manual_seed(D + len(variant))
    r = lambda *s: torch.randn(*s, generator=g, device="cuda")  # noqa: E731
    q, k, v = r(1, T, HQ, D), r(1, T, H, D), r(1, T, H, D)
    w, beta = F.normalize(r(1, T, H, D), dim=-1), 2 * torch.sigmoid(2 * r(1, T, H))
    gates = F.logsigmoid(r(1, T, HQ) + 4) if variant == "path_fox" else None
    ref = torch_backend.attend(AttentionInputs(q, k, v, D ** -0.5, w, beta, gates, D ** -0.5, None), None, False)[0]
    errors = {}
    for size in (1, 2, 4, 8, 16):
        out, _ = path_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), scale=D ** -0.5, w=w, beta=beta, g=gates,
                                gate_scale=D ** -0.5, super_chunks=size)
        errors[size] = relative_error(out, ref)
    print(f"{variant} D={D} rel err by super-chunk size", {s: f"{e:.2e}" for s, e in errors.items()})
    assert max(errors.values()) <= 2e-2 and max(errors[s] for s in (2, 4, 8, 16)) <= 1.25 * errors[1], errors


def far_apart(t: torch.Tensor, stride: int) -> torch.Tensor:
    """t [B, ...] copied into a storage whose batch stride is `stride` elements (the gaps are
    allocated but never written)."""
    store = torch.empty(stride * (t.shape[0] - 1) + t[0].numel(), dtype=t.dtype, device=t.device)
    out = store.as_strided(t.shape, (stride,) + t[0].contiguous().stride())
    out.copy_(t)
    return out


@pytest.mark.xdist_group("offsets_past_2_31")  # about 20 GB of GPU memory each: one worker runs them in turn
@pytest.mark.parametrize("super_chunks", [1, 2])
@pytest.mark.parametrize("variant", ["path", "path_fox"])
def test_offsets_past_2_31_elements(variant, super_chunks):
    """Inputs whose batch stride fits in int32 (2^30 + 4096 elements) but whose last batch starts
    past 2^31: the same output as contiguous inputs (equal but for a tuned configuration that may
    differ between the two calls), where int32 offset arithmetic would wrap and read other memory
    (errors of order 1), through the walk over every chunk and the coarse walk (values read in
    place there too). The interpreter computes offsets its own way and cannot test this."""
    g = torch.Generator(device="cuda").manual_seed(7)
    r = lambda *s: torch.randn(*s, generator=g, device="cuda")  # noqa: E731
    B, T, HQ, H, D = 3, 256, 4, 2, 64  # T a multiple of the chunk: no padded copies
    q, k, v = (r(B, T, n, D).bfloat16() for n in (HQ, H, H))
    w, beta = F.normalize(r(B, T, H, D), dim=-1), 2 * torch.sigmoid(2 * r(B, T, H))
    gates = F.logsigmoid(r(B, T, HQ) + 4) if variant == "path_fox" else None
    args = dict(scale=D ** -0.5, beta=beta, g=gates, gate_scale=D ** -0.5, super_chunks=super_chunks)
    want, _ = path_attention(q, k, v, w=w, **args)
    stride = 2 ** 30 + 4096
    got, _ = path_attention(far_apart(q, stride), far_apart(k, stride), far_apart(v, stride), w=far_apart(w, stride),
                            **args)
    assert relative_error(got, want) <= 1e-3


@pytest.mark.parametrize("variant", ["path", "path_fox", "fox", "rope"])
def test_model_full_forward_chunked_prefill_and_decode_agree(variant):
    from path_eval.models.generation import prefill
    model = tiny_model(variant).cuda()
    model.attention_backend = "triton"
    ids = torch.randint(0, 97, (2, 8192), generator=torch.Generator().manual_seed(0)).cuda()
    with torch.no_grad():
        full = model(ids).logits
        for chunk in (1000, 4096):
            logits, _ = prefill(model, ids[:, :8000], chunk_size=chunk, logits_to_keep=0)
            print(variant, "chunk", chunk, relative_error(logits, full[:, :8000]))
            assert relative_error(logits, full[:, :8000]) <= 1e-4
        _, cache = prefill(model, ids[:, :8000], chunk_size=3000, logits_to_keep=1)
        errors = []
        for t in range(8000, 8192):
            step = model(ids[:, t:t + 1], past_key_values=cache, use_cache=True).logits
            errors.append(relative_error(step[:, -1], full[:, t]))
        print(variant, "decode max", max(errors))
        assert max(errors) <= 1e-4


@pytest.mark.parametrize("variant", ["path", "path_fox", "fox", "rope"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_captured_decoding_step_equals_eager_steps(variant, dtype):
    """The whole model's decoding step recorded once as a CUDA graph and replayed through two folds
    on a left-padded batch gives the logits of eager steps on the same tokens (float32: the same
    arithmetic; bfloat16: the cache splits, fixed at capture, may round differently), and
    `generate` through the graph gives eager generation's tokens."""
    from path_eval.models.decode_graph import CapturedDecodeStep
    from path_eval.models.generation import generate, prefill
    model = tiny_model(variant).cuda().to(dtype)
    model.attention_backend = "triton"
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(3, 97, (3, 700), generator=g).cuda()
    mask = torch.ones_like(ids)
    mask[1, :37] = mask[2, :300] = 0
    new = torch.randint(3, 97, (3, 150), generator=g).cuda()
    with torch.no_grad():
        _, cache = prefill(model, ids, mask, chunk_size=256)
        eager = [model(new[:, t:t + 1], past_key_values=cache, use_cache=True).logits for t in range(150)]
        _, cache = prefill(model, ids, mask, chunk_size=256)
        graphed = [model(new[:, :1], past_key_values=cache, use_cache=True).logits]
        step = CapturedDecodeStep(model, cache, 149)
        graphed += [step(new[:, t]).clone() for t in range(1, 150)]
    errors = [relative_error(a, b) for a, b in zip(graphed, eager)]
    print(variant, dtype, "graph vs eager max", max(errors))
    assert max(errors) <= (1e-5 if dtype == torch.float32 else 1e-2)
    for layer in cache.layers:
        kv = layer.kv
        assert kv.length == 700 + 150 and kv.lengths.tolist() == [kv.folded, kv.pending_len]
    if dtype == torch.float32:
        kwargs = dict(max_new_tokens=140, eos_token_id=[], prefill_chunk_size=256)
        assert torch.equal(generate(model, ids, mask, cuda_graph=True, **kwargs),
                           generate(model, ids, mask, cuda_graph=False, **kwargs))


@pytest.mark.parametrize("variant", ["path", "path_fox"])
@pytest.mark.parametrize("ending", ["eos", "stop_strings", "both"])
@pytest.mark.parametrize("sampling", [False, True])
def test_graph_generation_gives_eager_ids_with_ends_stops_and_sampling(variant, ending, sampling):
    """The choice of the next token recorded in the graph (`generation.TokenChooser`): padding of
    finished rows, end tokens, stop strings at the (late, when greedy) looks and each row's end give
    eager generation's ids in float32 on a left-padded batch, greedy and sampled."""
    from path_eval.models.generation import generate
    model = tiny_model(variant).cuda()
    model.attention_backend = "triton"
    g = torch.Generator().manual_seed(21)
    ids = torch.randint(3, 97, (4, 300), generator=g).cuda()
    mask = torch.ones_like(ids)
    mask[1, :40] = mask[3, :170] = 0
    free = generate(model, ids, mask, max_new_tokens=30, eos_token_id=[], pad_token_id=0, cuda_graph=False)
    eos = sorted({int(free[0, 303]), int(free[2, 310])}) if ending != "stop_strings" else []

    def rows_past_five(new):
        return torch.tensor([False, new.shape[1] >= 6, False, new.shape[1] >= 6], device=new.device)

    def stop_all(new):
        return torch.ones(new.shape[0], dtype=torch.bool, device=new.device)

    options = dict(max_new_tokens=30, eos_token_id=eos, pad_token_id=0, prefill_chunk_size=128,
                   should_stop={"stop_strings": stop_all, "both": rows_past_five}.get(ending), do_sample=sampling,
                   temperature=0.7, top_k=20 if sampling else None)
    graphed = generate(model, ids, mask, cuda_graph=True,
                       generator=torch.Generator(device="cuda").manual_seed(1), **options)
    eager = generate(model, ids, mask, cuda_graph=False,
                     generator=torch.Generator(device="cuda").manual_seed(1), **options)
    assert torch.equal(graphed, eager)


def test_graph_decoding_in_a_row_captures_without_waiting_into_one_pool(monkeypatch):
    """Generation records its step without synchronizing the device or emptying the allocator's
    cache (`decode_graph.capturing_into`), into one memory pool per device: rounds of generations
    of two batch shapes give eager generation's ids, and rounds after the first reserve nothing more."""
    from path_eval.models.generation import generate
    model = tiny_model("path_fox").cuda()
    model.attention_backend = "triton"
    g = torch.Generator().manual_seed(8)
    batches = [torch.randint(3, 97, (rows, 300), generator=g).cuda() for rows in (2, 5)]
    kwargs = dict(max_new_tokens=24, eos_token_id=[], pad_token_id=0)
    eager = [generate(model, ids, cuda_graph=False, **kwargs) for ids in batches]

    def waited(*args, **kwargs):
        raise AssertionError("the capture waited for the device")

    reserved = []
    with monkeypatch.context() as patched:
        patched.setattr(torch.cuda, "synchronize", waited)
        patched.setattr(torch.cuda, "empty_cache", waited)
        for _ in range(3):
            for ids, expected in zip(batches, eager):
                assert torch.equal(generate(model, ids, cuda_graph=True, **kwargs), expected)
            reserved.append(torch.cuda.memory_reserved())
    assert reserved[1] == reserved[0] and reserved[2] == reserved[0], reserved


def test_graph_decoding_names_a_model_whose_logits_are_nan():
    """Greedy generation through the graph names a model whose logits are all NaN (its checks,
    `models.nan_logits`, deferred to the end of the call; the captured step runs none)."""
    from pathlib import Path

    from path_eval.errors import PathEvalError
    from path_eval.models.generation import generate
    from path_eval.models.nan_logits import refuse_nan_logits
    model = tiny_model("path").cuda()
    model.attention_backend = "triton"
    with torch.no_grad():
        model.get_output_embeddings().weight.fill_(float("nan"))
    refuse_nan_logits(model, Path("m"))
    ids = torch.randint(3, 97, (2, 50)).cuda()
    with pytest.raises(PathEvalError, match="model m gives NaN logits"):
        generate(model, ids, max_new_tokens=12, eos_token_id=[], cuda_graph=True)


def test_graph_decoding_needs_the_triton_backend():
    from path_eval.errors import PathEvalError
    from path_eval.models.generation import generate
    model = tiny_model("path").cuda()
    ids = torch.randint(3, 97, (1, 50)).cuda()
    with pytest.raises(PathEvalError, match="torch attention backend keeps no device-only cache"):
        generate(model, ids, max_new_tokens=5, eos_token_id=[], cuda_graph=True)
    assert generate(model, ids, max_new_tokens=5, eos_token_id=[]).shape == (1, 55)  # None: eager where no graph can be


@pytest.mark.parametrize("variant", ["path", "path_fox"])
def test_decoding_with_as_many_rows_as_sms(variant):
    """Batch x heads at least the SM count, as a 760M layer at B = 8: the decoding step's blocks of
    128 cached tokens (fewer rows take blocks of 64, which the other GPU tests cover), token by
    token through a fold, against one float32 pass of the torch backend."""
    from path_eval.kernels.path_attn.cache import PathKVCache
    B, T, new, H, D = 8, 1500, 70, 24, 64
    assert B * H >= torch.cuda.get_device_properties(0).multi_processor_count
    g = torch.Generator(device="cuda").manual_seed(3)
    r = lambda *s: torch.randn(*s, generator=g, device="cuda")  # noqa: E731
    q, k, v = r(B, T + new, H, D), r(B, T + new, H, D), r(B, T + new, H, D)
    w, beta = F.normalize(r(B, T + new, H, D), dim=-1), 2 * torch.sigmoid(2 * r(B, T + new, H))
    gates = F.logsigmoid(r(B, T + new, H) + 4) if variant == "path_fox" else None
    gate_scale = D ** -0.5 if variant == "path_fox" else 1.0
    ref = torch_backend.attend(AttentionInputs(q, k, v, D ** -0.5, w, beta, gates, gate_scale, None), None, False)[0]

    def part(a, b):
        return dict(q=q[:, a:b], k=k[:, a:b], v=v[:, a:b], w=w[:, a:b], beta=beta[:, a:b],
                    g=None if gates is None else gates[:, a:b], scale=D ** -0.5, gate_scale=gate_scale)
    cache = PathKVCache()
    cache.attend(**part(0, T))
    steps = torch.cat([cache.attend(**part(t, t + 1)) for t in range(T, T + new)], 1)
    err = relative_error(steps, ref[:, T:])
    print(f"{variant} B={B} H={H}: decoding rel err {err:.2e}")
    assert err <= 1e-4
