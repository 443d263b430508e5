"""The end-to-end bench's parts on tiny models: on the CPU, and fla's side on a GPU (the bench itself
runs on a GPU)."""
from __future__ import annotations

import copy
import importlib.util

import pytest
import torch

from benchmarks import end_to_end


def bench_args(tmp_path, *extra):
    return end_to_end.parse_args(["--device", "cpu", "--length", "512", "--requests", "2", "--batch-size", "2",
                                  "--warmup-requests", "1", "--warmup-length", "400", "--work", str(tmp_path / "work"),
                                  *extra])


def tiny_llama(folder):
    """A transformers Llama of the tiny shape (vocabulary 32000, the Mistral v1 tokenizer's) saved in `folder`."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=4096)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    return model


def test_both_sides_answer_alike_on_the_same_weights(tmp_path, monkeypatch):
    """lm-eval's hf model and ours over one checkpoint: the same kind of record and the same greedy texts
    (the bench hands both sides the same requests and options); a cold start in its own process; and
    `eval.py run` on the frozen samples asks the very requests the generate part timed."""
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    checkpoint = tmp_path / "llama"
    hf_model = tiny_llama(checkpoint)
    saved = []
    records = end_to_end.run_bench(bench_args(tmp_path), hf_model, checkpoint,
                                   lambda records: saved.append(copy.deepcopy(records)))
    ours, hf, speedup, cold, run = records
    assert [len(s) for s in saved] == [1, 2, 3, 4, 5] and saved[-1] == records  # saved after each record
    assert (ours["side"], hf["side"], speedup["side"]) == ("path", "hf", "speedup")
    assert set(hf) == set(ours) - {"model_seconds"}
    assert ours["warmup_s"] > 0 and hf["kernels_compiled_in_timed_call"] == {}  # the warm-up is the timed requests
    assert hf["impl"].startswith("lm-eval HFLM over transformers") and ours["impl"].startswith("path-eval PathEvalLM")
    assert hf["requests"] == ours["requests"] == 2 and hf["prompt_tokens"] == ours["prompt_tokens"] > 2 * 200
    assert speedup["speedup"] == pytest.approx(hf["seconds"] / ours["seconds"], rel=0.01)
    assert speedup["same_generations"] == 2 and hf["generated_characters"] == ours["generated_characters"] > 0
    assert cold["status"] == "ok" and cold["requests"] == 1 and cold["first_call_s"] > 0 and cold["load_s"] > 0
    assert cold["compile_autotune_s"] == pytest.approx(cold["first_call_s"] - cold["second_call_s"], abs=0.002)
    assert isinstance(cold["triton_compiles"], dict) and set(cold["launcher_builds"]) == {"count", "s"}
    assert all(set(c) == {"count", "s"} and c["count"] >= 1 for c in cold["triton_compiles"].values())
    assert run["status"] == "ok" and run["same_requests"] and run["requests_computed"] == 2
    assert run["wall_s"] > run["generation_s"] > 0
    assert set(run["phases"]) >= {"samples", "requests"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or importlib.util.find_spec("fla") is None,
                    reason="needs fla and a CUDA GPU: fla's Triton kernels autotune, which needs a GPU driver even "
                           "under TRITON_INTERPRET")
def test_fla_and_ours_answer_alike_on_fla_weights(tmp_path, monkeypatch):
    """lm-eval's hf model over fla's own PaTH model, and ours over the checkpoint fla saved: the same
    greedy texts (float32, Triton's float32 products exact, so that near ties fall alike). Minutes on an
    H200: fla compiles and autotunes its kernels for each new shape."""
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    # the warm-up requests are the timed ones (same length, seed and count): fla compiles for one set of shapes
    args = end_to_end.parse_args(["--device", "cuda", "--dtype", "float32", "--length", "512", "--requests", "2",
                                  "--batch-size", "2", "--warmup-requests", "2", "--warmup-length", "512",
                                  "--parts", "generate", "--work", str(tmp_path / "work")])
    checkpoint = tmp_path / "fla"
    fla_model = end_to_end.fla_checkpoint("tiny", checkpoint, "cuda", torch.float32)
    ours, hf, speedup = end_to_end.run_bench(args, fla_model, checkpoint, lambda r: None)
    assert hf["impl"] == "lm-eval HFLM over fla PaTHAttentionForCausalLM"
    assert speedup["same_generations"] == 2 and hf["generated_characters"] == ours["generated_characters"] > 0, speedup


def test_kernels_compiled_are_named_from_tritons_cache(tmp_path):
    for entry, name in (("a", "_path_attn_fwd"), ("b", "_path_attn_fwd"), ("c", "_fold")):
        (tmp_path / entry).mkdir()
        for file in (f"__grp__{name}.json", f"{name}.json", f"{name}.cubin"):
            (tmp_path / entry / file).write_text("{}")
    new = end_to_end.cached_kernels(tmp_path) - {"c"}
    assert end_to_end.kernel_names(tmp_path, new) == {"_path_attn_fwd": 2}


def test_a_part_it_does_not_know_is_one_line(capsys):
    assert end_to_end.main(["--parts", "generate,warp", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == "error: --parts generate,warp: choose from generate, cold, run\n"


def test_a_task_or_length_it_cannot_run_is_one_line_before_any_model_is_built(capsys, monkeypatch):
    monkeypatch.setattr(end_to_end, "fla_checkpoint", lambda *a, **k: pytest.fail("built a model"))
    assert end_to_end.main(["--task", "niah_single_9", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("error: --task niah_single_9: the ruler suite has niah_single_1, ")
    assert end_to_end.main(["--warmup-length", "0", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == "error: --warmup-length 0: give 1 or more tokens\n"


def test_the_cold_start_result_is_the_last_json_line():
    assert end_to_end.last_json_line('autotuning...\n{"load_s": 1.5}\nbye\n') == {"load_s": 1.5}
    assert end_to_end.last_json_line("Traceback (most recent call last):\n") is None


def test_a_cold_start_counts_each_triton_compilation_by_kernel_and_each_launcher_build():
    """Triton calls its compilation listener once per compiled specialisation (cache hits too, which
    are not compiling) and builds a C launcher through `triton.runtime.build._build`; the cold start
    sums the compiler's microseconds per kernel and times the builds, then puts back what it found."""
    from types import SimpleNamespace

    triton = pytest.importorskip("triton")
    from triton.runtime import build

    knobs = triton.knobs
    found, found_build = knobs.compilation.listener, build._build
    calls = []
    fake = build._build = lambda *args, **kwargs: calls.append(args) or "launcher.so"
    try:
        with end_to_end.triton_compiles() as compiles:
            for name, micros, hit in [("_rms_norm", 1_500_000, False), ("_fwd", 250_000, False),
                                      ("_rms_norm", 500_000, False), ("_fwd", 9_000_000, True)]:
                knobs.compilation.listener(src=SimpleNamespace(name=name), metadata={}, metadata_group={},
                                           times=SimpleNamespace(total=micros), cache_hit=hit)
            assert build._build("__triton_launcher", "src.c", "/tmp") == "launcher.so"
        assert knobs.compilation.listener is found and build._build is fake
    finally:
        build._build = found_build
    assert compiles["kernels"] == {"_rms_norm": {"count": 2, "s": 2.0}, "_fwd": {"count": 1, "s": 0.25}}
    assert compiles["launchers"]["count"] == 1 and 0 <= compiles["launchers"]["s"] < 1 and len(calls) == 1
