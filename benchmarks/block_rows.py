"""Query rows a forward program owns (BM): one chunk of 64 rows, or two chunks (128 rows, the second
chunk's rows catching up with the first's at the diagonal step). Correctness first (BM = 128 against
BM = 64 and against the float32 torch backend), then each kernel variant's launch configurations
timed by an unpruned autotuner (`fwd.CONFIGS`) and the whole forward at its fastest one, beside
the preparation alone and cuDNN's SDPA. B x T = 64K tokens, 32 heads of 64 / 16 of 128, bf16
(w float32, as the model gives it), default super-chunks.

    python -m benchmarks.block_rows --out results/bench/block_rows_h200.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

from benchmarks.forward_autotune import config_timings, tuning_table
from benchmarks.kernels import CHECK_NAMES, GATED, TOKENS, inputs, log, sdpa, timed
from path_eval.models.attention import AttentionInputs, torch_backend
from path_eval.numerics import relative_error
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kernel_source, kilo, load, sci, table as markdown_table


def forward(fwd, x, block_m):
    args = {k: v for k, v in x.items() if k not in ("qh", "kh", "vh")}
    return fwd.path_attention(**args, block_m=block_m)[0]


def check(fwd, ops, block_rows) -> list[dict]:
    """Each BM's output against the float32 torch backend, and against BM = 64 (the same products
    in another order: close to float32 rounding)."""
    rows = []
    for D in (64, 128):
        for op in ops:
            transform, gate = GATED[op]
            x = inputs(2, 4096, 4, D, transform, gate, seed=D)
            a = AttentionInputs(x["q"].float(), x["k"].float(), x["v"].float(), x["scale"], x.get("w"), x.get("beta"),
                                x.get("g"), x.get("gate_scale", 1.0), None)
            ref = torch_backend.attend(a, None, False)[0]
            base = forward(fwd, x, 64)
            for bm in block_rows:
                o = forward(fwd, x, bm)
                rows.append(dict(op=op, D=D, T=4096, block_m=bm, rel_vs_fp32_torch=relative_error(o, ref),
                                 rel_vs_bm64=relative_error(o, base)))
                log("check", rows[-1])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/block_rows.json"))
    parser.add_argument("--head-dims", default="128,64")
    parser.add_argument("--lengths", default="8192,16384")
    parser.add_argument("--ops", default="path_fwd,attn_fwd")
    parser.add_argument("--block-rows", default="64,128")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no timing after this many seconds")
    parser.add_argument("--no-check", action="store_true", help="time only (the compiled tests check the kernels)")
    args = parser.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    if set(ops) - set(GATED):
        raise SystemExit(f"--ops {args.ops}: choose from {', '.join(GATED)}")
    head_dims = [int(d) for d in args.head_dims.split(",")]
    lengths = [int(t) for t in args.lengths.split(",")]
    block_rows = [int(b) for b in args.block_rows.split(",")]
    if not torch.cuda.is_available():
        raise SystemExit("block_rows times the compiled kernels: run it on a CUDA GPU")
    from path_eval.kernels.path_attn import fwd
    from path_eval.kernels.path_attn.fwd import prepare_walk

    if not fwd.TUNED:
        raise SystemExit("the forward is not autotuned here (interpreter or PATH_EVAL_AUTOTUNE=0): run on a GPU")
    began = time.perf_counter()
    meta = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "command": " ".join(["python -m benchmarks.block_rows", *(sys.argv[1:] if argv is None else argv)])}
    out = {**meta, "checks": [] if args.no_check else check(fwd, ops, block_rows), "tuning": [], "records": []}
    write_json_atomic(out, args.out)
    fwd._path_attn_fwd = triton.autotune(configs=fwd.CONFIGS, key=fwd.TUNING_KEY)(fwd._path_attn_fwd.fn)
    for D in head_dims:
        H = 32 if D == 64 else 16
        for T in lengths:
            B = TOKENS // T
            flops = 4 * B * H * T * T * D / 2
            for op in ops:
                transform, gate = GATED[op]
                x = inputs(B, T, H, D, transform, gate)
                if op == "attn_fwd":
                    x.update(qh=x["q"].transpose(1, 2), kh=x["k"].transpose(1, 2), vh=x["v"].transpose(1, 2))
                    out["records"].append(timed(lambda: sdpa("sdpa-cudnn")(x), flops, op=op, impl="sdpa-cudnn",
                                                D=D, T=T, B=B, H=H))
                if transform:
                    size = fwd.default_super_chunks(D, T)
                    ms = do_bench(lambda: prepare_walk(x["q"], x["k"], x["w"], x["beta"], None, 64, size, False),
                                  warmup=25, rep=100)
                    out["records"].append(dict(op="path_prep_coarse", impl="path-eval", D=D, T=T, B=B, H=H, ms=ms,
                                               super_chunks=size))
                for bm in block_rows:
                    if time.perf_counter() - began > args.budget_s:
                        log("budget spent: no more timings")
                        write_json_atomic(out, args.out)
                        return 0
                    seen = len(fwd._path_attn_fwd.cache)
                    forward(fwd, x, bm)
                    torch.cuda.synchronize()
                    if len(fwd._path_attn_fwd.cache) > seen:  # this call tuned a new variant
                        timings = config_timings(fwd._path_attn_fwd)
                        out["tuning"].append(dict(op=op, D=D, T=T, block_m=bm, ms_by_config=timings,
                                                  fastest=min(timings, key=timings.get)))
                        log("tuned", out["tuning"][-1])
                    out["records"].append(timed(lambda: forward(fwd, x, bm), flops, op=op, impl="path-eval",
                                                block_m=bm, D=D, T=T, B=B, H=H))
                    log(out["records"][-1])
                    write_json_atomic(out, args.out)
                del x
                torch.cuda.empty_cache()
    table(out)
    return 0


def table(out: dict) -> None:
    """ms per forward by BM, and the speed-up of each BM over 64."""
    recs = out["records"]
    print("| op | D | T | " + " | ".join(f"BM={bm} ms" for bm in sorted({r['block_m'] for r in recs if 'block_m' in r}))
          + " | prep ms | cuDNN ms |")
    keys = sorted({(r["op"], r["D"], r["T"]) for r in recs if "block_m" in r})
    for op, D, T in keys:
        cells = [f"{r['ms']:.2f}" for r in sorted((r for r in recs if (r["op"], r["D"], r["T"]) == (op, D, T)
                                                    and "block_m" in r), key=lambda r: r["block_m"])]
        prep = next((f"{r['ms']:.2f}" for r in recs if r["op"] == "path_prep_coarse" and (r["D"], r["T"]) == (D, T)), "-")
        cudnn = next((f"{r['ms']:.2f}" for r in recs if r["impl"] == "sdpa-cudnn" and (r["D"], r["T"]) == (D, T)), "-")
        print(f"| {op} | {D} | {T} | " + " | ".join(cells) + f" | {prep if op != 'attn_fwd' else '-'} | {cudnn} |")


# ---------------------------------------------------------------- docs/benchmarks.md

def block_rows_tables(data: dict) -> str:
    """A record's checks, each forward's ms by rows a program (BM) beside the preparation and cuDNN,
    and every launch configuration the autotuner timed per variant."""
    parts = []
    if data["checks"]:
        rows = [[CHECK_NAMES.get(c["op"], c["op"]), str(c["D"]), str(c["T"]), str(c["block_m"]),
                 sci(c["rel_vs_fp32_torch"]), sci(c["rel_vs_bm64"])] for c in data["checks"]]
        parts.append(markdown_table(["kernel", "D", "T", "BM", "rel. vs float32", "rel. vs BM = 64"], rows))
    recs = data["records"]
    sizes = sorted({r["block_m"] for r in recs if "block_m" in r})
    rows = []
    for op, d, t in sorted({(r["op"], r["D"], r["T"]) for r in recs if "block_m" in r}, key=lambda k: (k[0], -k[1], k[2])):
        ms = {r["block_m"]: r["ms"] for r in recs if (r["op"], r["D"], r["T"]) == (op, d, t) and "block_m" in r}
        prep = next((r["ms"] for r in recs if r["op"] == "path_prep_coarse" and (r["D"], r["T"]) == (d, t)), None)
        cudnn = next((r["ms"] for r in recs if r["impl"] == "sdpa-cudnn" and (r["D"], r["T"]) == (d, t)), None)
        rows.append([CHECK_NAMES.get(op, op), str(d), kilo(t), *(f"{ms[b]:.2f}" if b in ms else "-" for b in sizes),
                     "-" if prep is None or op == "attn_fwd" else f"{prep:.2f}", "-" if cudnn is None else f"{cudnn:.2f}"])
    parts.append(markdown_table(["kernel", "D", "T", *(f"BM = {b} ms" for b in sizes), "preparation ms", "cuDNN ms"], rows))
    parts.append(tuning_table(data["tuning"], lambda t: f"{CHECK_NAMES.get(t['op'], t['op'])} D = {t['D']} "
                                                        f"{kilo(t['T'])} BM = {t['block_m']}"))
    return "\n\n".join(parts)


def render_block_rows(results: Path) -> str:
    parts = []
    for path in sorted((results / "bench").glob("block_rows*.json")):
        data = load(path)
        parts += [kernel_source(path, results, data), block_rows_tables(data)]
    return "\n\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
