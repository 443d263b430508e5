"""Whole-model generation: decoding tokens per second of our models against the same-shape Llama.

    python -m benchmarks.generation --out results/bench/generation_h200.json

Issue 18's target: whole-model generation of the 760M shape within 1.3x the tokens/s of the same-shape
Llama with SDPA and a static cache, i.e. ours >= Llama / 1.3. The models (`--models`), random weights
in bfloat16, built by `benchmarks.extrapolation_speed.build` at `--shape`:
  - path, path_fox: ours on the `--attention` backend (default: the device's default), decoding by
    `path_eval.models.generation.generate` in each of `--modes`: eager (cuda_graph=False) and graph
    (cuda_graph=True), the prompt prefilled `--prefill-chunk` tokens at a time as `eval.py run` does;
  - llama: transformers' `LlamaForCausalLM`, SDPA attention, `generate(..., cache_implementation="static")`
    in each of `--llama-modes`. transformers compiles the decoding forward by itself
    (`GenerativePreTrainedModel._valid_auto_compile_criteria`) when the model is on CUDA (or XPU, or a
    CompileConfig says compile on all devices), the cache is a compilable one other than DynamicCache
    (a static cache is), `generation_config.disable_compile` is not set and the model is neither
    quantized incompatibly nor offloaded; it then calls `torch.compile` with the default CompileConfig
    (mode "reduce-overhead": CUDA graphs) and keeps the result on the model as `_compiled_call`.
    compiled = that default; eager = `disable_compile=True`. Each record says whether the forward was
    compiled, as observed on the model after its calls.

Protocol for each prompt length (`--prompt-lengths`, shortest first), batch size (`--batches`), model and
mode: random prompt tokens (seeded), greedy decoding that never stops early (ours: `eos_token_id=[]`;
llama: `min_new_tokens` = `max_new_tokens`); one untimed warm-up call of N = `--new-tokens` new tokens
(its seconds are `warmup_s`: for llama compiled, the torch.compile cost), then one call of 1 new token
and one of N, each between `torch.cuda.synchronize()`. Decoding rate per row = (N - 1) / (seconds of the
N-token call - seconds of the 1-token call): the prefill and the first token cancel. Llama's static cache
is sized prompt + N in all three calls: transformers 5.24 sizes it to the longest call yet on the model,
and that length is forgotten before each warm-up, as are the compiled forward and dynamo's caches, so
that each configuration compiles for its own shapes. Peak memory is the allocator's peak during the
N-token call less the weights of the other models resident beside it (null on the CPU).

`--budget-s` starts no new measurement after that many seconds; a configuration that fails (out of
memory, an exception) becomes a record with its status. The JSON (records, and a summary of ours against
each llama mode at the same batch and length) is written after every record. On a CPU it runs with
`--shape tiny --device cpu --modes eager --llama-modes eager` and short prompts (as the tests do).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from benchmarks.end_to_end import machine, synchronize, versions
from benchmarks.extrapolation_speed import build, weight_bytes
from path_eval.models.random_checkpoint import SHAPES
from path_eval.errors import PathEvalError
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kilo, load, machine_line, ratio, seconds, source, table

MODELS = ("path", "path_fox", "llama")
OUR_MODES = ("eager", "graph")
LLAMA_MODES = ("compiled", "eager")
TARGET = 1.3  # issue 18: ours within 1.3x the same-shape Llama's tokens/s
LLAMA = "rope-sdpa"  # the name of the same-shape Llama in extrapolation_speed.build


def parse_args(argv: list[str]) -> argparse.Namespace:
    from path_eval.models.context import PREFILL_CHUNK

    parser = argparse.ArgumentParser(prog="python -m benchmarks.generation", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/generation_h200.json"))
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated, from " + ", ".join(MODELS))
    parser.add_argument("--modes", default=",".join(OUR_MODES), help="our models' modes: " + ", ".join(OUR_MODES))
    parser.add_argument("--llama-modes", default=",".join(LLAMA_MODES), help="llama's modes: " + ", ".join(LLAMA_MODES))
    parser.add_argument("--batches", default="1,8", help="batch sizes, comma-separated")
    parser.add_argument("--prompt-lengths", default="4096,16384", help="prompt tokens, comma-separated")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--shape", choices=SHAPES, default="760m")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--attention", default=None, help="our models' backend (default: the device's default)")
    parser.add_argument("--prefill-chunk", type=int, default=PREFILL_CHUNK, help="our models' prefill chunk")
    parser.add_argument("--seed", type=int, default=0, help="the prompts' seed")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no measurement after this many seconds")
    args = parser.parse_args(argv)
    args.models = choices("--models", args.models, MODELS)
    args.modes = choices("--modes", args.modes, OUR_MODES)
    args.llama_modes = choices("--llama-modes", args.llama_modes, LLAMA_MODES)
    args.batches = whole_numbers("--batches", args.batches, least=1)
    args.prompt_lengths = sorted(whole_numbers("--prompt-lengths", args.prompt_lengths, least=2))
    if args.new_tokens < 2:
        raise PathEvalError(f"--new-tokens {args.new_tokens}: give 2 or more (the rate is the N-token call "
                            "less the 1-token call)")
    if args.prefill_chunk < 1:
        raise PathEvalError(f"--prefill-chunk {args.prefill_chunk}: give 1 or more tokens")
    from path_eval.models.loading import check_device_and_backend

    check_device_and_backend(args.device, args.attention)
    if torch.device(args.device).type != "cuda":
        if "graph" in args.modes and any(name != "llama" for name in args.models):
            raise PathEvalError(f"--modes graph needs --device cuda (CUDA graphs); give --modes eager on {args.device}")
        if "compiled" in args.llama_modes and "llama" in args.models:
            raise PathEvalError(f"--llama-modes compiled needs --device cuda (transformers compiles the static-cache "
                                f"decoding on CUDA only); give --llama-modes eager on {args.device}")
    return args


def choices(option: str, text: str, allowed: tuple[str, ...]) -> list[str]:
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in allowed]
    if unknown or not chosen:
        raise PathEvalError(f"{option} {text}: choose from {', '.join(allowed)}")
    return chosen


def whole_numbers(option: str, text: str, least: int) -> list[int]:
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        raise PathEvalError(f"{option} {text}: give comma-separated whole numbers, each {least} or more") from None
    if any(n < least for n in numbers):
        raise PathEvalError(f"{option} {text}: give comma-separated whole numbers, each {least} or more")
    return numbers


def bench_command(argv: list[str]) -> str:
    return shlex.join(["python", "-m", "benchmarks.generation", *argv])


# ----------------------------------------------------------------- generating


def generation_call(name: str, model, mode: str, device: str, prefill_chunk: int):
    """`run(prompt [B, L], new_tokens) -> [B, L + new]`: greedy generation in `mode` that never
    stops early. Ours is given `cuda_graph` on CUDA only, where the choice exists."""
    if name == "llama":
        def run(prompt, new_tokens):
            return model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens,
                                  min_new_tokens=new_tokens, do_sample=False, cache_implementation="static",
                                  disable_compile=mode == "eager", pad_token_id=0)
        return run
    graph = {"cuda_graph": mode == "graph"} if torch.device(device).type == "cuda" else {}

    def run(prompt, new_tokens):
        return model.generate(prompt, max_new_tokens=new_tokens, eos_token_id=[], prefill_chunk_size=prefill_chunk,
                              **graph)
    return run


def forget_llama_state(model) -> None:
    """Drop what transformers keeps on the model between `generate` calls: its compiled forward, the
    longest static cache yet (which sizes later caches), and dynamo's caches, so that the next call
    compiles (or not) for its own shapes."""
    torch._dynamo.reset()
    for kept in ("_compiled_call", "_previous_max_cache_length"):
        if hasattr(model, kept):
            delattr(model, kept)


def timed(run, prompt: torch.Tensor, new_tokens: int, device: str, clock) -> tuple[float, int]:
    """Seconds of one call and the new tokens it returned."""
    synchronize(device)
    start = clock()
    out = run(prompt, new_tokens)
    synchronize(device)
    return clock() - start, out.shape[1] - prompt.shape[1]


def measure(run, prompt: torch.Tensor, new_tokens: int, device: str, resident_bytes: int = 0,
            clock=time.perf_counter) -> dict:
    """Warm-up, the 1-token call and the N-token call of `run`, and the decoding rate from the two
    timed calls. `resident_bytes`: the other models' weights, which the peak memory leaves out."""
    batch = prompt.shape[0]
    on_cuda = torch.device(device).type == "cuda"
    warmup_s, _ = timed(run, prompt, new_tokens, device, clock)
    one_s, one_count = timed(run, prompt, 1, device, clock)
    if on_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    n_s, n_count = timed(run, prompt, new_tokens, device, clock)
    record = {"warmup_s": round(warmup_s, 3), "one_token_s": round(one_s, 4), "new_tokens_s": round(n_s, 4),
              "peak_memory_gib": round((torch.cuda.max_memory_allocated(device) - resident_bytes) / 2**30, 2)
              if on_cuda else None}
    if (one_count, n_count) != (1, new_tokens):
        return {"status": f"failed (generated {one_count} and {n_count} new tokens, not 1 and {new_tokens})"} | record
    if n_s <= one_s:
        return {"status": f"failed (the {new_tokens}-token call took no longer than the 1-token call: "
                          "give more --new-tokens)"} | record
    per_row = (new_tokens - 1) / (n_s - one_s)
    return {"status": "ok", "tokens_per_second_per_row": round(per_row, 1),
            "tokens_per_second": round(per_row * batch, 1), "ms_per_step": round(1000 / per_row, 3)} | record


def measure_config(name: str, model, mode: str, prompt: torch.Tensor, args, resident_bytes: int) -> dict:
    """One (model, mode, batch, length) as a record; a failure becomes its status."""
    run = generation_call(name, model, mode, args.device, args.prefill_chunk)
    if name == "llama":
        forget_llama_state(model)
    try:
        record = measure(run, prompt, args.new_tokens, args.device, resident_bytes)
    except torch.OutOfMemoryError:
        record = {"status": "out of memory"}
    except Exception as error:  # one configuration's failure is its record, not the end of the run
        message = (str(error).strip().splitlines() or [""])[0][:200]
        record = {"status": f"failed ({type(error).__name__}: {message})"}
    if torch.device(args.device).type == "cuda":
        torch.cuda.empty_cache()
    if name == "llama":
        record["compiled"] = hasattr(model, "_compiled_call")
    return record


def configurations(args) -> list[tuple[str, str]]:
    return [(name, mode) for name in args.models for mode in (args.llama_modes if name == "llama" else args.modes)]


def prompt_tokens(batch: int, length: int, vocab_size: int, seed: int, device: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, length), generator=generator).to(device)


def run_bench(args, models: dict, save, began: float | None = None) -> list[dict]:
    """Every configuration over `models` ({name: (model, impl)}), `save(records)` after each record;
    the time budget counts from `began` (a `time.perf_counter()`; default now)."""
    began = time.perf_counter() if began is None else began
    on_cuda = torch.device(args.device).type == "cuda"
    weights = {name: weight_bytes(model) if on_cuda else 0 for name, (model, _) in models.items()}
    records: list[dict] = []
    for length in args.prompt_lengths:
        for batch in args.batches:
            prompt = prompt_tokens(batch, length, SHAPES[args.shape]["vocab_size"], args.seed, args.device)
            for name, mode in configurations(args):
                model, impl = models[name]
                record = {"model": name, "impl": impl, "mode": mode, "batch": batch, "prompt_tokens": length,
                          "new_tokens": args.new_tokens}
                if time.perf_counter() - began > args.budget_s:
                    record["status"] = "not run (time budget)"
                else:
                    resident = sum(bytes_ for other, bytes_ in weights.items() if other != name)
                    record |= measure_config(name, model, mode, prompt, args, resident)
                records.append(record)
                print(json.dumps(record), flush=True)
                save(records)
    return records


def summary(records: list[dict]) -> list[dict]:
    """Ours against each llama mode at the same batch and prompt length: tokens/s ratio and whether
    it meets the target (ours >= llama / TARGET). The ratio keeps three significant digits, so
    a small one (a noisy CPU run's 0.006) still matches the two tokens/s it comes from."""
    llama = {(r["mode"], r["batch"], r["prompt_tokens"]): r for r in records
             if r["model"] == "llama" and r["status"] == "ok"}
    rows = []
    for r in records:
        if r["model"] == "llama" or r["status"] != "ok":
            continue
        for (llama_mode, batch, length), theirs in llama.items():
            if (batch, length) == (r["batch"], r["prompt_tokens"]):
                ratio = r["tokens_per_second"] / theirs["tokens_per_second"]
                rows.append({"model": r["model"], "mode": r["mode"], "llama_mode": llama_mode,
                             "llama_compiled": theirs["compiled"], "batch": batch, "prompt_tokens": length,
                             "tokens_per_second": r["tokens_per_second"],
                             "llama_tokens_per_second": theirs["tokens_per_second"], "ratio": float(f"{ratio:.3g}"),
                             "target_ratio": round(1 / TARGET, 3), "meets_target": ratio >= 1 / TARGET})
    return rows


def main(argv: list[str] | None = None) -> int:
    began = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from path_eval.models.attention import default_backend

    shape = SHAPES[args.shape]
    attention = args.attention or default_backend(args.device, torch.bfloat16, shape["hidden_size"] // shape["num_heads"])
    models = {name: build(LLAMA if name == "llama" else name, args.device, attention, args.shape)
              for name in args.models}  # all built first, so that a budget cut drops lengths, not models
    meta = {"command": bench_command(argv), "machine": machine(args.device), "versions": versions(),
            "device": args.device, "shape": shape, "dtype": "bfloat16", "new_tokens": args.new_tokens,
            "prefill_chunk": args.prefill_chunk, "target": f"ours tokens/s >= llama tokens/s / {TARGET}"}

    def save(records: list[dict]) -> None:
        write_json_atomic({"meta": meta, "records": records, "summary": summary(records)}, args.out)

    records = run_bench(args, models, save, began)
    print(f"\n{'model':9s} {'mode':9s} {'B':>3s} {'prompt':>7s} {'tok/s/row':>10s} {'tok/s':>9s}  status")
    for r in records:
        print(f"{r['model']:9s} {r['mode']:9s} {r['batch']:3d} {r['prompt_tokens']:7d} "
              f"{r.get('tokens_per_second_per_row', float('nan')):10.1f} {r.get('tokens_per_second', float('nan')):9.1f}"
              f"  {r['status']}")
    for row in summary(records):
        print(f"{row['model']} {row['mode']} vs llama {row['llama_mode']} at B={row['batch']}, {row['prompt_tokens']} "
              f"tokens: {row['ratio']:.2f}x (target >= {row['target_ratio']:.2f}x: "
              f"{'met' if row['meets_target'] else 'NOT met'})")
    return 0


# ---------------------------------------------------------------- docs/benchmarks.md

def render_generation(results: Path) -> str:
    """The run in results/bench/generation_h200.json: the decoding rate of each configuration, then
    ours against the same-shape Llama, the 1.3x target."""
    path = results / "bench" / "generation_h200.json"
    data = load(path)
    meta = data["meta"]
    shape = ", ".join(f"{k} {v}" for k, v in meta["shape"].items())
    impls = {r["model"]: r["impl"] for r in data["records"] if "impl" in r}
    rows = []
    for r in data["records"]:
        compiled = "-" if "compiled" not in r else ("yes" if r["compiled"] else "no")
        ok = r["status"] == "ok"
        peak = r.get("peak_memory_gib")
        rows.append([r["model"], r["mode"], compiled, str(r["batch"]), kilo(r["prompt_tokens"]),
                     f"{r['tokens_per_second_per_row']:.1f}" if ok else "-", f"{r['tokens_per_second']:.0f}" if ok else "-",
                     "-" if peak is None else f"{peak:.1f}", seconds(r.get("warmup_s")), r["status"]])
    llama_modes = list(dict.fromkeys(row["llama_mode"] for row in data["summary"]))
    ours: dict[tuple, dict[str, dict]] = {}
    for row in data["summary"]:
        ours.setdefault((row["model"], row["mode"], row["batch"], row["prompt_tokens"]), {})[row["llama_mode"]] = row
    summary_rows = []
    for (model, mode, batch, length), against in ours.items():
        cells = []
        for llama_mode in llama_modes:
            row = against.get(llama_mode)
            cells += ["-", "-"] if row is None else [ratio(row["ratio"]), "yes" if row["meets_target"] else "NO"]
        summary_rows.append([model, mode, str(batch), kilo(length),
                             f"{next(iter(against.values()))['tokens_per_second']:.0f}", *cells])
    target = data["summary"][0]["target_ratio"] if data["summary"] else None
    parts = [f"Source: {source(path, results)}. " + machine_line(
                 GPU=meta["machine"], **{name: version for name, version in meta["versions"].items() if version})
             + f" Models of shape {shape}, random weights, {meta['dtype']}: "
             + "; ".join(f"{model} = {impl}" for model, impl in impls.items())
             + f". {meta['new_tokens']} new tokens a call.",
             table(["model", "mode", "forward compiled", "B", "prompt", "tok/s per row", "tok/s x B", "peak GiB",
                    "warm-up s", "status"], rows)]
    if summary_rows:
        parts += [f"Ours against the Llama (target: at least {ratio(target)}):",
                  table(["model", "mode", "B", "prompt", "tok/s x B",
                         *(header for m in llama_modes for header in (f"ours / llama {m}", f"target met vs {m}"))],
                        summary_rows)]
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
