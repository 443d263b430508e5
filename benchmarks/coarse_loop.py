"""The forward's inner loop, measured against an earlier revision of `fwd.py`: the softmax scale
taken into exp2's argument (one fused multiply-add per logit instead of a multiply), and the coarse
walk's key loop in blocks of one chunk or two (`COARSE_CHUNKS`: half the online-softmax steps, each
on a 64 x 128 block of logits).

First each candidate launch configuration is checked against the float32 torch backend; then the
candidates are timed by an autotuner keyed on T too (Triton's timings of the kernel alone), and
the whole forward at the fastest one, beside the earlier revision's forward (its own tuned
configurations) and cuDNN's SDPA. B x T = 64K tokens, 32 heads of 64 / 16 of 128, bf16, w float32.

    git show REVISION:kernels/path_attn/fwd.py > /tmp/fwd_before.py
    python -m benchmarks.coarse_loop --baseline /tmp/fwd_before.py --out results/bench/coarse_loop_h200.json
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import torch
import triton

from benchmarks.forward_autotune import config_name, config_timings, tuning_table
from benchmarks.kernels import CHECK_NAMES, GATED, TOKENS, inputs, log, sdpa, timed
from path_eval.models.attention import AttentionInputs, torch_backend
from path_eval.numerics import relative_error
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kernel_source, kilo, load, ratio, sci, table as markdown_table


def candidates(fwd, D: int) -> list[triton.Config]:
    """The coarse walk's configurations tuned before `COARSE_CHUNKS` (at D = 64 4 warps at 3 stages,
    capped at 2 stages, and capped with `COARSE_STAGES` 3; at D = 128 4 warps at 1 or 2 stages, 8 at
    2, and 4 at 1 with `COARSE_STAGES` 2 or 3: 8 warps were 1.5-3.5x slower at D = 64), each with its
    key loop one chunk and two chunks a step."""
    if D <= 64:
        base = [({}, 4, 3, None), ({}, 4, 2, fwd.CAPPED), ({"COARSE_STAGES": 3}, 4, 2, fwd.CAPPED)]
    else:
        base = [({}, 4, 1, None), ({}, 4, 2, None), ({}, 8, 2, None),
                ({"COARSE_STAGES": 2}, 4, 1, None), ({"COARSE_STAGES": 3}, 4, 1, None)]
    return [triton.Config({**kwargs, **extra}, num_warps=w, num_stages=st, maxnreg=cap)
            for kwargs, w, st, cap in base for extra in ({}, {"COARSE_CHUNKS": 2})]


def load_baseline(path: Path):
    spec = importlib.util.spec_from_file_location("fwd_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def forward(module, x):
    return module.path_attention(**{k: v for k, v in x.items() if k not in ("qh", "kh", "vh")})[0]


def tuner(module, configs, prune: bool = False):
    """An autotuner over `configs` keyed on T too, so that each length gets its own choice."""
    return triton.autotune(configs=configs, key=module.TUNING_KEY + ["T"],
                           prune_configs_by={"early_config_prune": module._prune} if prune else None
                           )(module._path_attn_fwd.fn)


def check(fwd, op: str, D: int, configs) -> list[dict]:
    """Each candidate configuration's output against the float32 torch backend (4 heads, 4K tokens,
    super-chunks of 16: the coarse walk runs)."""
    transform, gate = GATED[op]
    x = inputs(2, 4096, 4, D, transform, gate, seed=D)
    a = AttentionInputs(x["q"].float(), x["k"].float(), x["v"].float(), x["scale"], x.get("w"), x.get("beta"),
                        x.get("g"), x.get("gate_scale", 1.0), None)
    ref = torch_backend.attend(a, None, False)[0]
    rows = []
    for c in configs:
        fwd._path_attn_fwd = tuner(fwd, [c])
        o = fwd.path_attention(**x, super_chunks=16)[0]
        rows.append(dict(op=op, D=D, config=str(c), rel_vs_fp32_torch=relative_error(o, ref)))
        log("check", rows[-1])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/coarse_loop.json"))
    parser.add_argument("--baseline", type=Path, required=True, help="an earlier revision's fwd.py")
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--lengths", default="8192,16384")
    parser.add_argument("--ops", default="path_fwd,attn_fwd,path_fox_fwd")
    parser.add_argument("--check-ops", default="path_fwd", help="ops whose candidates are checked first")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no timing after this many seconds")
    args = parser.parse_args(argv)
    if not args.baseline.is_file():
        raise SystemExit(f"--baseline {args.baseline}: no such file (git show REV:kernels/path_attn/fwd.py > FILE)")
    if not torch.cuda.is_available():
        raise SystemExit("coarse_loop times the compiled kernels: run it on a CUDA GPU")
    from path_eval.kernels.path_attn import fwd

    if not fwd.TUNED:
        raise SystemExit("the forward is not autotuned here (interpreter or PATH_EVAL_AUTOTUNE=0): run on a GPU")
    before = load_baseline(args.baseline)
    before._path_attn_fwd = tuner(before, before.CONFIGS, prune=True)  # its own configurations, per variant and T
    ops = [o for o in args.ops.split(",") if o]
    began = time.perf_counter()
    out = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "command": " ".join(["python -m benchmarks.coarse_loop", *(sys.argv[1:] if argv is None else argv)]),
           "checks": [], "tuning": [], "records": []}
    head_dims = [int(d) for d in args.head_dims.split(",")]
    for D in head_dims:
        for op in (o for o in args.check_ops.split(",") if o):
            out["checks"] += check(fwd, op, D, candidates(fwd, D))
    write_json_atomic(out, args.out)
    for D in head_dims:
        H = 32 if D == 64 else 16
        configs = candidates(fwd, D)
        for op in ops:
            transform, gate = GATED[op]
            # plain attention never runs the coarse loop: it tunes its usual configurations
            fwd._path_attn_fwd = tuner(fwd, configs) if transform else tuner(fwd, fwd.CONFIGS, prune=True)
            for T in (int(t) for t in args.lengths.split(",")):
                if time.perf_counter() - began > args.budget_s:
                    log("budget spent: no more timings")
                    write_json_atomic(out, args.out)
                    table(out)
                    return 0
                B = TOKENS // T
                flops = 4 * B * H * T * T * D / 2
                x = inputs(B, T, H, D, transform, gate)
                forward(before, x)
                forward(fwd, x)
                torch.cuda.synchronize()
                timings = config_timings(fwd._path_attn_fwd)
                out["tuning"].append(dict(op=op, D=D, T=T, ms_by_config=timings, fastest=min(timings, key=timings.get)))
                log("tuned", out["tuning"][-1])
                for impl, module in (("now", fwd), ("before", before)):
                    out["records"].append(timed(lambda: forward(module, x), flops, op=op, impl=impl,
                                                D=D, T=T, B=B, H=H))
                    log(out["records"][-1])
                if op == "attn_fwd":
                    x.update(qh=x["q"].transpose(1, 2), kh=x["k"].transpose(1, 2), vh=x["v"].transpose(1, 2))
                    out["records"].append(timed(lambda: sdpa("sdpa-cudnn")(x), flops, op=op, impl="sdpa-cudnn",
                                                D=D, T=T, B=B, H=H))
                write_json_atomic(out, args.out)
                del x
                torch.cuda.empty_cache()
    table(out)
    return 0


def table(out: dict) -> None:
    """ms per forward now and before, and the fastest candidate configuration."""
    print("| op | D | T | before ms | now ms | now / before | fastest configuration |")
    for t in out["tuning"]:
        ms = {r["impl"]: r["ms"] for r in out["records"] if (r["op"], r["D"], r["T"]) == (t["op"], t["D"], t["T"])}
        if {"now", "before"} <= ms.keys():
            print(f"| {t['op']} | {t['D']} | {t['T']} | {ms['before']:.2f} | {ms['now']:.2f} | "
                  f"{ms['now'] / ms['before']:.3f} | {t['fastest']} |")


# ---------------------------------------------------------------- docs/benchmarks.md

def coarse_loop_tables(data: dict) -> str:
    """A record's check of each candidate configuration, the whole forwards now and at the earlier
    revision beside cuDNN, and every configuration the autotuner timed per variant."""
    rows = [[CHECK_NAMES.get(c["op"], c["op"]), str(c["D"]), config_name(c["config"]),
             sci(c["rel_vs_fp32_torch"])] for c in data["checks"]]
    parts = [markdown_table(["kernel", "D", "configuration", "rel. vs float32"], rows)]
    recs = data["records"]
    rows = []
    for t in data["tuning"]:
        ms = {r["impl"]: r["ms"] for r in recs if (r["op"], r["D"], r["T"]) == (t["op"], t["D"], t["T"])}
        if {"now", "before"} <= ms.keys():
            rows.append([CHECK_NAMES.get(t["op"], t["op"]), str(t["D"]), kilo(t["T"]), f"{ms['before']:.2f}",
                         f"{ms['now']:.2f}", ratio(ms["before"] / ms["now"]),
                         f"{ms['sdpa-cudnn']:.2f}" if "sdpa-cudnn" in ms else "-",
                         config_name(t["fastest"])])
    parts.append(markdown_table(["kernel", "D", "T", "before ms", "now ms", "speed-up", "cuDNN ms", "fastest configuration"],
                       rows))
    tuned = [t for t in data["tuning"] if t["op"] != "attn_fwd"]
    parts.append(tuning_table(tuned, lambda t: f"{CHECK_NAMES.get(t['op'], t['op'])} D = {t['D']} {kilo(t['T'])}"))
    return "\n\n".join(parts)


def render_coarse_loop(results: Path) -> str:
    path = results / "bench" / "coarse_loop_h200.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), coarse_loop_tables(data)])


if __name__ == "__main__":
    raise SystemExit(main())
