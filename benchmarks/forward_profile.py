"""GPU time of each kernel in one PaTH / PaTH-FoX forward, by torch.profiler: the forward kernel,
the preparation's transition and query kernels, the super-chunk transport, and any torch op between
them. B x T = 64K tokens, 32 heads of 64 / 16 of 128, bf16 (w float32), at the default super-chunk
size; ms per call, averaged over five calls after three warm-up calls.

    python -m benchmarks.forward_profile --out results/bench/forward_profile.json
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
from torch.profiler import ProfilerActivity, profile

from benchmarks.kernels import inputs, ours
from path_eval.atomic_files import write_json_atomic


def kernel_ms(x: dict, calls: int = 5) -> dict[str, float]:
    """ms per call of each CUDA kernel `ours(x)` launches."""
    for _ in range(3):
        ours(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            ours(x)
        torch.cuda.synchronize()
    rows = {}
    for event in prof.key_averages():
        total = getattr(event, "device_time_total", 0) or getattr(event, "cuda_time_total", 0)
        if total > 0:
            rows[event.key[:60]] = round(total / calls / 1000, 3)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/forward_profile.json"))
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--lengths", default="8192,16384")
    args = parser.parse_args(argv)
    heads = {"64": 32, "128": 16}  # the kernel bench's shapes: 2048 wide either way
    head_dims = [d.strip() for d in args.head_dims.split(",") if d.strip()]
    if not head_dims or set(head_dims) - set(heads):
        raise SystemExit(f"--head-dims {args.head_dims}: choose from {', '.join(heads)}")
    lengths = [t.strip() for t in args.lengths.split(",") if t.strip()]
    if not lengths or not all(t.isdigit() and int(t) and 65536 % int(t) == 0 for t in lengths):
        raise SystemExit(f"--lengths {args.lengths}: give token counts that divide 65536 (B x T = 64K tokens)")
    if not torch.cuda.is_available():
        raise SystemExit("forward_profile times the compiled kernels: run it on a CUDA GPU")
    meta = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "command": " ".join(["python -m benchmarks.forward_profile", *(sys.argv[1:] if argv is None else argv)])}
    profiles = {}
    for D in head_dims:
        for T in map(int, lengths):
            for gate in (False, True):
                x = inputs(65536 // T, T, heads[D], int(D), True, gate)
                key = f"D{D} T{T} {'fox' if gate else 'path'}"
                profiles[key] = kernel_ms(x)
                print(key, "total ms", round(sum(profiles[key].values()), 3), flush=True)
                for name, ms in sorted(profiles[key].items(), key=lambda kv: -kv[1])[:8]:
                    print(f"   {ms:8.3f}  {name}", flush=True)
                write_json_atomic({**meta, "profile": profiles}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
