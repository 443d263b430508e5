"""Tokens per second and peak GPU memory of scoring one L-token block, the Figure 3 protocol.

    python -m benchmarks.extrapolation_speed --out results/bench/extrapolation_h200.json

Each model is 760M-shaped (hidden 1536, 24 layers, 24 heads of 64, vocabulary 32000) with random
weights in bfloat16. Scoring is exactly what `eval.py run --suite extrapolation` does per block
(`next_token_nll`: chunked prefill for our models, sliced vocabulary projection for all):
  - path, path_fox, fox: our models on the `--attention` backend (default: the device's default);
  - rope-sdpa: a transformers Llama of the same shape with SDPA attention (the plain-RoPE yardstick);
  - fla-path: fla's own PaTH model (`path_attn`), one forward of its base model, where fla is installed.
One warm-up block at `--warmup` tokens per model, then each length once (shortest first, every model); lengths that run out of
memory are recorded as such. `--budget-s` stops starting new measurements after that many seconds.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from path_eval.lm.scoring import next_token_nll
from path_eval.models.random_checkpoint import SHAPES, random_model
from path_eval.models.attention import default_backend
from path_eval.models.config import PathEvalConfig
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kilo, load, machine_line, source, table

SHAPE = SHAPES["760m"]
MODELS = ("path", "path_fox", "fox", "rope-sdpa", "fla-path")


def build(name: str, device: str, attention: str, shape: str = "760m"):
    """A model of `shape` (a key of SHAPES) in bfloat16 on `device`, and the attention implementation
    it runs. Built on the device itself: initialising 760M float32 weights on the host takes longer
    than scoring."""
    torch.manual_seed(0)
    with torch.device(device):
        return _build(name, device, attention, shape)


def _build(name: str, device: str, attention: str, shape: str):
    dims = SHAPES[shape]
    if name in ("path", "path_fox", "fox"):
        model = random_model(name, shape)
        model.attention_backend = attention
        impl = f"path-eval {attention}"
    elif name == "rope-sdpa":
        from transformers import LlamaConfig, LlamaForCausalLM
        config = LlamaConfig(hidden_size=dims["hidden_size"], num_hidden_layers=dims["num_hidden_layers"],
                             num_attention_heads=dims["num_heads"],
                             intermediate_size=PathEvalConfig(**dims).intermediate_size,
                             vocab_size=dims["vocab_size"], max_position_embeddings=262144)
        model = LlamaForCausalLM._from_config(config, attn_implementation="sdpa")
        impl = "transformers Llama, sdpa"
    else:
        from transformers import AutoConfig, AutoModelForCausalLM
        import fla  # noqa: F401  (registers path_attn with the Auto classes)
        config = AutoConfig.for_model("path_attn", hidden_size=dims["hidden_size"],
                                      num_hidden_layers=dims["num_hidden_layers"], num_heads=dims["num_heads"],
                                      vocab_size=dims["vocab_size"], use_cache=False)
        model = AutoModelForCausalLM.from_config(config)
        impl = f"fla {fla.__version__} parallel_path_attn"
    return model.to(device=device, dtype=torch.bfloat16).eval(), impl


def weight_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def random_block(length: int) -> list[int]:
    """The token ids scored at `length`: uniform over the vocabulary, seeded by the length, so every
    model and every bench that scores this length sees the same block."""
    return torch.randint(0, SHAPE["vocab_size"], (length,), generator=torch.Generator().manual_seed(length)).tolist()


def measure(model, length: int, prefill_chunk: int) -> dict:
    """Seconds and peak memory of scoring one random block; the peak counts this model's weights and
    activations, not the other models resident beside it."""
    block = random_block(length)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    others = torch.cuda.memory_allocated() - weight_bytes(model)
    torch.cuda.synchronize()
    start = time.perf_counter()
    try:
        nll = next_token_nll(model, block, prefill_chunk)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        return {"tokens": length, "status": "out of memory"}
    seconds = time.perf_counter() - start
    return {"tokens": length, "status": "ok", "seconds": round(seconds, 3),
            "tokens_per_second": round(length / seconds, 1),
            "peak_memory_gib": round((torch.cuda.max_memory_allocated() - others) / 2**30, 2),
            "mean_nll": round(nll.mean().item(), 4), "finite": bool(torch.isfinite(nll).all())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/extrapolation_h200.json")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--lengths", default="16384,32768,65536,131072")
    parser.add_argument("--prefill-chunk", type=int, default=8192)
    parser.add_argument("--attention", default=None, help="our models' backend (default: the device's default)")
    parser.add_argument("--warmup", type=int, default=4096)
    parser.add_argument("--budget-s", type=float, default=1e9)
    args = parser.parse_args()
    device = "cuda"
    attention = args.attention or default_backend(device, torch.bfloat16, SHAPE["hidden_size"] // SHAPE["num_heads"])
    lengths = [int(x) for x in args.lengths.split(",")]
    began = time.perf_counter()
    models = {}
    for name in args.models.split(","):  # all built first (~1.6 GB each), so a budget cut drops lengths, not models
        models[name] = build(name, device, attention)
        measure(models[name][0], args.warmup, args.prefill_chunk)
    records = []
    for length in lengths:
        for name, (model, impl) in models.items():
            if time.perf_counter() - began > args.budget_s:
                records.append({"model": name, "tokens": length, "status": "not run (time budget)"})
                continue
            record = {"model": name, "impl": impl, **measure(model, length, args.prefill_chunk)}
            records.append(record)
            print(json.dumps(record), flush=True)
            save(records, args)  # after each record: a run cut short keeps what it measured
    save(records, args)
    print(f"\n{'model':10s} {'tokens':>7s} {'tok/s':>9s} {'peak GiB':>9s}  status")
    for r in records:
        print(f"{r['model']:10s} {r['tokens']:7d} {r.get('tokens_per_second', float('nan')):9.0f} "
              f"{r.get('peak_memory_gib', float('nan')):9.2f}  {r['status']}")


def save(records: list[dict], args) -> None:
    command = ("python -m benchmarks.extrapolation_speed " +
               f"--models {args.models} --lengths {args.lengths} --prefill-chunk {args.prefill_chunk}" +
               (f" --attention {args.attention}" if args.attention else ""))
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": platform.python_version(),
            "shape": SHAPE, "dtype": "bfloat16", "prefill_chunk": args.prefill_chunk, "command": command}
    write_json_atomic({"meta": meta, "records": records}, Path(args.out))


# ---------------------------------------------------------------- docs/benchmarks.md

def render_extrapolation(results: Path) -> str:
    """Each run (results/bench/extrapolation_*.json) as its own table: runs of different revisions
    and backends are not mixed in one."""
    parts = []
    for path in sorted((results / "bench").glob("extrapolation_*.json")):
        data = load(path)
        cells: dict[tuple[int, str], str] = {}
        models: list[str] = []
        impls: dict[str, str] = {}
        for r in data["records"]:
            if r["model"] not in models:
                models.append(r["model"])
            if "impl" in r:
                impls[r["model"]] = r["impl"]
            cells[(r["tokens"], r["model"])] = (f"{r['tokens_per_second']:.0f} tok/s, {r['peak_memory_gib']:.2f} GiB"
                                                if r["status"] == "ok" else r["status"])
        lengths = sorted({tokens for tokens, _ in cells})
        header = ["tokens"] + [f"{m} ({impls[m]})" if m in impls else m for m in models]
        rows = [[kilo(t)] + [cells.get((t, m), "-") for m in models] for t in lengths]
        meta = data["meta"]
        shape = ", ".join(f"{k} {v}" for k, v in meta["shape"].items())
        parts += [f"Source: {source(path, results)}. "
                  + machine_line(GPU=meta.get("gpu"), torch=meta.get("torch"), Python=meta.get("python"))
                  + f" Models of shape {shape}, random weights, {meta['dtype']}, chunked prefill of "
                  f"{meta['prefill_chunk']} tokens where a block does not fit one pass.",
                  table(header, rows)]
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
