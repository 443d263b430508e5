"""The preparation's super-chunk transport beside the query kernel on a second stream, against the two
one after the other (`fwd.OVERLAP_MAX_LENGTH`): the preparation alone and the whole forward timed
both ways, each forward's peak memory both ways, and the two outputs compared bit for bit (the
kernels and their inputs are the same; only the order of launches differs). B x T = 64K tokens,
32 heads of 64 / 16 of 128, bf16, w float32, the default super-chunks; cuDNN's SDPA at the same
shape for scale.

    python -m path_eval.bench.prep_overlap --out results/bench/prep_overlap_h200.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import triton

from path_eval.bench.kernels import GATED, TOKENS, inputs, log, sdpa, timed
from path_eval.results.store import write_json_atomic

MODES = {"one stream": 0, "two streams": 1 << 30}  # OVERLAP_MAX_LENGTH of each mode


def peak_gib(fn) -> float:
    """The memory fn allocates at its peak above what was allocated before it, GiB."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/prep_overlap.json"))
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--lengths", default="4096,8192,16384,65536")
    parser.add_argument("--ops", default="path_fwd,path_fox_fwd")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no timing after this many seconds")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("prep_overlap times the compiled kernels on two CUDA streams: run it on a CUDA GPU")
    from path_eval.kernels.path_attn import fwd

    began = time.perf_counter()
    out = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "command": " ".join(["python -m path_eval.bench.prep_overlap", *(sys.argv[1:] if argv is None else argv)]),
           "records": []}
    for D in (int(d) for d in args.head_dims.split(",")):
        H = 32 if D == 64 else 16
        for T in (int(t) for t in args.lengths.split(",")):
            size = fwd.default_super_chunks(D, T)
            if size == 1:
                log(f"D={D} T={T}: no coarse walk at this length, no transport to overlap")
                continue
            B = TOKENS // T
            flops = 4 * B * H * T * T * D / 2
            for op in (o for o in args.ops.split(",") if o):
                if time.perf_counter() - began > args.budget_s:
                    log("budget spent: no more timings")
                    write_json_atomic(out, args.out)
                    return 0
                x = inputs(B, T, H, D, *GATED[op])
                forward = lambda: fwd.path_attention(**x)[0]  # noqa: E731
                prep = lambda: fwd.prepare_walk(x["q"], x["k"], x["w"], x["beta"], x.get("g"), 64, size, False)  # noqa: E731
                outputs = {}
                for mode, limit in MODES.items():
                    fwd.OVERLAP_MAX_LENGTH = limit
                    outputs[mode] = forward()  # tunes on the first call
                    record = timed(forward, flops, op=op, part="forward", mode=mode, D=D, T=T, B=B, H=H,
                                   super_chunks=size)
                    record["peak_gib"] = peak_gib(forward)
                    record["prep_ms"] = timed(prep, flops)["ms"]
                    out["records"].append(record)
                    log(record)
                a, b = outputs.values()
                out["records"].append(dict(op=op, part="outputs", D=D, T=T, identical=bool(torch.equal(a, b))))
                log(out["records"][-1])
                write_json_atomic(out, args.out)
            x = inputs(B, T, H, D, False, False)
            x.update(qh=x["q"].transpose(1, 2), kh=x["k"].transpose(1, 2), vh=x["v"].transpose(1, 2))
            out["records"].append(timed(lambda: sdpa("sdpa-cudnn")(x), flops, op="attn_fwd", part="forward",
                                        mode="sdpa-cudnn", D=D, T=T, B=B, H=H))
            log(out["records"][-1])
            write_json_atomic(out, args.out)
    fwd.OVERLAP_MAX_LENGTH = max(MODES.values())
    table(out)
    return 0


def table(out) -> None:
    """op, D, T: forward and preparation ms one stream / two streams, the ratio, x cuDNN, peaks."""
    rows = {}
    for r in out["records"]:
        if r["part"] == "forward" and r["mode"] != "sdpa-cudnn":
            rows.setdefault((r["op"], r["D"], r["T"]), {})[r["mode"]] = r
    sdpa_ms = {(r["D"], r["T"]): r["ms"] for r in out["records"] if r.get("mode") == "sdpa-cudnn"}
    print("op D T | forward ms 1 / 2 streams (ratio) | prep ms 1 / 2 | x cuDNN 2 streams | peak GiB 1 / 2")
    for (op, D, T), m in rows.items():
        if len(m) < 2:
            continue
        one, two = m["one stream"], m["two streams"]
        vs = sdpa_ms.get((D, T))
        times_sdpa = "" if vs is None else f"{vs / two['ms']:.3f}"
        print(f"{op} {D} {T} | {one['ms']:.2f} / {two['ms']:.2f} ({two['ms'] / one['ms']:.3f}) | "
              f"{one['prep_ms']:.2f} / {two['prep_ms']:.2f} | {times_sdpa} | "
              f"{one['peak_gib']:.2f} / {two['peak_gib']:.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
