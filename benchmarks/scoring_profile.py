"""Where the GPU time of scoring one long block goes, kernel by kernel, for our model and the Llama.

    python -m benchmarks.scoring_profile --models path,rope-sdpa --length 65536 \
        --out results/bench/scoring_profile_h200.json

The models and the scoring call are `extrapolation_speed`'s (760M shape, random bf16 weights,
`next_token_nll`), so the per-kernel totals explain its tokens/s: one warm-up block at the measured
length (nothing compiles in the profiled call), then one profiled block per model. Each kernel's
row is its GPU ms summed over the call; `busy_ms` is their sum, `wall_ms` the call's time under
the profiler.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.extrapolation_speed import MODELS, SHAPE, build, random_block
from path_eval.lm.scoring import next_token_nll
from path_eval.models.attention import default_backend
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import load, machine_line, source, table


def kernel_totals(model, block: list[int], prefill_chunk: int) -> dict:
    """GPU ms of each kernel over one scoring call of `block`, largest first."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        next_token_nll(model, block, prefill_chunk)
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    rows = {}
    for event in prof.key_averages():
        total = getattr(event, "device_time_total", 0) or getattr(event, "cuda_time_total", 0)
        if total > 0 and event.device_type == torch.autograd.DeviceType.CUDA:
            rows[event.key[:90]] = {"ms": round(total / 1000, 2), "calls": event.count}
    rows = dict(sorted(rows.items(), key=lambda kv: -kv[1]["ms"]))
    return {"wall_ms": round(wall * 1000, 1), "busy_ms": round(sum(r["ms"] for r in rows.values()), 1),
            "kernels": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="path,rope-sdpa")
    parser.add_argument("--length", type=int, default=65536)
    parser.add_argument("--prefill-chunk", type=int, default=8192)
    parser.add_argument("--top", type=int, default=12, help="rows of the printed table per model")
    parser.add_argument("--out", default="results/bench/scoring_profile_h200.json")
    args = parser.parse_args(argv)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    if not names or set(names) - set(MODELS):
        raise SystemExit(f"--models {args.models}: choose from {', '.join(MODELS)}")
    if args.length < 2:
        raise SystemExit(f"--length {args.length}: score a block of at least 2 tokens")
    if not torch.cuda.is_available():
        raise SystemExit("scoring_profile times CUDA kernels: run it on a CUDA GPU")
    attention = default_backend("cuda", torch.bfloat16, SHAPE["hidden_size"] // SHAPE["num_heads"])
    block = random_block(args.length)
    profiles = {}
    for name in names:
        model, impl = build(name, "cuda", attention)
        next_token_nll(model, block, args.prefill_chunk)  # warm-up: compiles and autotunes at this length
        profiles[name] = {"impl": impl, **kernel_totals(model, block, args.prefill_chunk)}
        del model
        torch.cuda.empty_cache()
    command = (f"python -m benchmarks.scoring_profile --models {args.models} --length {args.length} "
               f"--prefill-chunk {args.prefill_chunk}")
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": platform.python_version(),
            "shape": SHAPE, "dtype": "bfloat16", "command": command}
    write_json_atomic({"meta": meta, "profiles": profiles}, Path(args.out))
    for name, p in profiles.items():
        print(f"\n{name} ({p['impl']}): wall {p['wall_ms']} ms, kernels {p['busy_ms']} ms")
        for key, row in list(p["kernels"].items())[:args.top]:
            print(f"  {row['ms']:9.2f} ms {row['calls']:6d}  {key}")
    return 0


# ---------------------------------------------------------------- docs/benchmarks.md

def render_scoring_profile(results: Path, top: int = 10) -> str:
    """Each run (results/bench/scoring_profile_*.json): the call's time per model, then each model's
    largest kernels."""
    parts = []
    for path in sorted((results / "bench").glob("scoring_profile_*.json")):
        data = load(path)
        meta, profiles = data["meta"], data["profiles"]
        parts += [f"Source: {source(path, results)}. "
                  + machine_line(GPU=meta.get("gpu"), torch=meta.get("torch"), Python=meta.get("python")),
                  table(["model", "wall ms (profiled)", "kernels ms"],
                        [[f"{name} ({p['impl']})", f"{p['wall_ms']:.1f}", f"{p['busy_ms']:.1f}"]
                         for name, p in profiles.items()])]
        for name, p in profiles.items():
            rows = [[f"{row['ms']:.2f}", str(row["calls"]), f"`{kernel}`"]
                    for kernel, row in list(p["kernels"].items())[:top]]
            parts += [f"Largest {top} kernels of {name}:", table(["ms", "calls", "kernel"], rows)]
    return "\n\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
