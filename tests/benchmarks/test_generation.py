"""The generation bench on the CPU at the tiny shape: its records and summary, the rate formula, the
token counts of both sides, failures and the time budget as records, and bad input as one line."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import torch

from benchmarks import generation
from benchmarks.extrapolation_speed import build

CPU = ["--shape", "tiny", "--device", "cpu", "--modes", "eager", "--llama-modes", "eager"]
# The bench calls a record failed when its N-token call took no longer than its 1-token call; at the
# tiny shape a step is a few ms on a CPU, so 3 extra steps could drown in another test worker's noise
# (a Llama record failed so in a CI run); 31 extra steps leave ten times the margin.
NEW_TOKENS = 32


@pytest.fixture(scope="module")
def bench_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("generation") / "bench" / "generation_h200.json"
    argv = [*CPU, "--batches", "1,2", "--prompt-lengths", "8,12", "--new-tokens", str(NEW_TOKENS), "--out", str(out)]
    assert generation.main(argv) == 0
    return out, argv


class FakeClock:
    """A clock that only the fake generation moves: 0.5 s of prefill and 0.01 s per new token."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def generate(self, prompt, new_tokens, returned=None):
        self.now += 0.5 + 0.01 * new_tokens
        return torch.zeros(prompt.shape[0], prompt.shape[1] + (new_tokens if returned is None else returned))


def test_the_rate_is_the_n_token_call_less_the_one_token_call():
    clock = FakeClock()
    prompt = torch.zeros(3, 10, dtype=torch.long)
    record = generation.measure(clock.generate, prompt, 9, "cpu", clock=clock)
    assert record["status"] == "ok"
    assert (record["warmup_s"], record["one_token_s"], record["new_tokens_s"]) == (0.59, 0.51, 0.59)
    assert record["tokens_per_second_per_row"] == pytest.approx(100.0)  # 8 tokens in 0.08 s
    assert record["tokens_per_second"] == pytest.approx(300.0)
    assert record["ms_per_step"] == pytest.approx(10.0)
    assert record["peak_memory_gib"] is None  # no peak on the CPU


def test_a_call_that_returns_too_few_tokens_is_a_failed_record():
    clock = FakeClock()
    short = lambda prompt, new_tokens: clock.generate(prompt, new_tokens, returned=min(new_tokens, 3))  # noqa: E731
    record = generation.measure(short, torch.zeros(1, 5, dtype=torch.long), 9, "cpu", clock=clock)
    assert record["status"] == "failed (generated 1 and 3 new tokens, not 1 and 9)"
    assert "tokens_per_second" not in record


def eos_always_wins(model, eos: int) -> None:
    """The end-of-sequence token the argmax of every position: a side that stopped at it would
    return one new token."""
    def hook(module, inputs, logits):
        return logits.index_fill(-1, torch.tensor([eos]), 1e4)
    model.lm_head.register_forward_hook(hook)


@pytest.mark.parametrize("name", ["path", "llama"])
def test_both_sides_generate_exactly_n_new_tokens_past_an_eos(name):
    model, _ = build(generation.LLAMA if name == "llama" else name, "cpu", "torch", "tiny")
    eos_always_wins(model, 2)
    prompt = generation.prompt_tokens(2, 6, 32000, seed=0, device="cpu")
    stopping = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=5, do_sample=False,
                              pad_token_id=0)
    assert stopping.shape[1] == 6 + 1  # the hook makes the eos the first new token; plain generation stops
    run = generation.generation_call(name, model, "eager", "cpu", prefill_chunk=4)
    out = run(prompt, 5)
    assert out.shape == (2, 6 + 5)
    assert torch.equal(out[:, :6], prompt)


def test_the_bench_writes_every_configuration_and_the_summary(bench_json):
    out, argv = bench_json
    data = json.loads(out.read_text())
    meta = data["meta"]
    assert meta["command"] == "python -m benchmarks.generation " + " ".join(argv)
    assert {"torch", "triton", "transformers"} <= set(meta["versions"]) and meta["machine"]
    assert meta["new_tokens"] == NEW_TOKENS and meta["shape"]["hidden_size"] == 64
    records = data["records"]
    expected = [(length, batch, model) for length in (8, 12) for batch in (1, 2) for model in generation.MODELS]
    assert [(r["prompt_tokens"], r["batch"], r["model"]) for r in records] == expected
    for r in records:
        assert r["status"] == "ok", r
        assert r["mode"] == "eager" and r["new_tokens"] == NEW_TOKENS and r["peak_memory_gib"] is None
        # both rounded to 0.1 from the same unrounded rate: they differ by at most 0.05 x (batch + 1)
        assert abs(r["tokens_per_second"] - r["tokens_per_second_per_row"] * r["batch"]) <= 0.05 * (r["batch"] + 1) + 1e-9
        # "ok" says the N-token call took longer (unrounded); rounded to 0.1 ms the two may tie
        assert r["new_tokens_s"] >= r["one_token_s"] and r["warmup_s"] > 0
        assert (r["model"] == "llama") == ("compiled" in r)
    assert not any(r.get("compiled") for r in records)  # transformers compiles on CUDA only
    summary = data["summary"]
    assert [(s["model"], s["batch"], s["prompt_tokens"]) for s in summary] == [
        (model, batch, length) for length, batch, model in expected if model != "llama"]
    by_key = {(r["model"], r["batch"], r["prompt_tokens"]): r for r in records}
    for s in summary:
        ours, llama = by_key[s["model"], s["batch"], s["prompt_tokens"]], by_key["llama", s["batch"], s["prompt_tokens"]]
        assert s["ratio"] == pytest.approx(ours["tokens_per_second"] / llama["tokens_per_second"], rel=1e-2)
        # decided on the two rates themselves, not on the ratio rounded to three digits
        assert s["meets_target"] == (ours["tokens_per_second"] / llama["tokens_per_second"] >= 1 / generation.TARGET)


def test_the_docs_render_the_generation_json(bench_json):
    out, _ = bench_json
    data = json.loads(out.read_text())
    text = generation.render_generation(out.parent.parent)
    first = data["records"][0]
    assert (f"| {first['model']} | eager | - | 1 | 8 | {first['tokens_per_second_per_row']:.1f} | "
            f"{first['tokens_per_second']:.0f} | - |") in text
    row = data["summary"][0]
    assert f"| {row['model']} | eager | 1 | 8 | {row['tokens_per_second']:.0f} | {row['ratio']:.2f}x |" in text
    assert "at least 0.77x" in text


def bench_args(**overrides):
    return SimpleNamespace(**{"models": ["path", "llama"], "modes": ["eager"], "llama_modes": ["eager"],
                              "batches": [1], "prompt_lengths": [8], "new_tokens": 3, "shape": "tiny", "device": "cpu",
                              "prefill_chunk": 8, "seed": 0, "budget_s": 0.0} | overrides)


def test_past_the_budget_every_measurement_is_a_record_saying_so():
    saved = []
    records = generation.run_bench(bench_args(), {"path": (None, "ours"), "llama": (None, "theirs")}, saved.append,
                                   began=time.perf_counter() - 1)
    assert [(r["model"], r["status"]) for r in records] == [("path", "not run (time budget)"),
                                                            ("llama", "not run (time budget)")]
    assert saved[-1] == records


@pytest.mark.parametrize("error, status", [(torch.OutOfMemoryError("CUDA out of memory"), "out of memory"),
                                           (RuntimeError("kernel failed\nmore"), "failed (RuntimeError: kernel failed)")])
def test_a_failing_configuration_is_a_record_not_a_crash(error, status):
    def generate(*args, **kwargs):
        raise error
    model = SimpleNamespace(generate=generate)
    record = generation.measure_config("path", model, "eager", torch.zeros(1, 8, dtype=torch.long), bench_args(), 0)
    assert record == {"status": status}


@pytest.mark.parametrize("argv, line", [
    (["--models", "path,gpt"], "error: --models path,gpt: choose from path, path_fox, llama"),
    (["--modes", "fast"], "error: --modes fast: choose from eager, graph"),
    (["--llama-modes", "jit"], "error: --llama-modes jit: choose from compiled, eager"),
    (["--prompt-lengths", "1,8"], "error: --prompt-lengths 1,8: give comma-separated whole numbers, each 2 or more"),
    (["--batches", "one"], "error: --batches one: give comma-separated whole numbers, each 1 or more"),
    (["--new-tokens", "1"], "error: --new-tokens 1: give 2 or more (the rate is the N-token call less the 1-token call)"),
    (["--modes", "graph"], "error: --modes graph needs --device cuda (CUDA graphs); give --modes eager on cpu"),
    (["--llama-modes", "compiled"], "error: --llama-modes compiled needs --device cuda (transformers compiles the "
                                    "static-cache decoding on CUDA only); give --llama-modes eager on cpu"),
])
def test_bad_input_is_one_line_naming_the_fix(argv, line, capsys, tmp_path):
    assert generation.main([*CPU, "--out", str(tmp_path / "g.json"), *argv]) == 2
    assert capsys.readouterr().err.strip() == line
    assert not (tmp_path / "g.json").exists()
