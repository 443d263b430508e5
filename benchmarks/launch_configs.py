"""Time the PaTH preparation's kernels and the super-chunk transport under candidate launch
configurations (warps, register cap, pipeline stages), so the fixed choices in `prep.py` and
`coarse.py` (`_transition_launch`, `_queries_launch`, `_transport_launch`) come from a measurement.

    python -m benchmarks.launch_configs --out results/bench/launch_configs.json
    python -m benchmarks.launch_configs --parts decode --out results/bench/decode_launch_configs.json

bf16 inputs as the bench's (float32 w), B x T = 64K tokens at T = 8192, 32 heads of 64 / 16 of 128.
Each record: the kernel step, the head dim, the configuration and triton.testing.do_bench's median.
The step "preparation" times the whole `prepare_path` (both launches) with the transition kernel's
configuration varied and the query kernel's fixed, and the reverse for "queries"; "transport" times
`super_chunk_transport_triton` at S = 8, beside the torch version it replaced ("transport torch").
The part "decode" times `_decode_attend` (`decode.py`, `_attend_launch`: block of cached tokens,
pipeline stages, warps) as a CUDA-graph replay of one 760M-shaped layer's decoding step
(`benchmarks.kernels.graphed_decode_ms`: 24 heads of 64, wall clock per token, folds included)
at batch 1 and 8. These are not autotuned at run time: each candidate is a compile, and a cold run's cost counts.
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from benchmarks.kernels import inputs, log
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kernel_source, kilo, load, table

# Capped at 128 registers (4 warps) and at 2 warps, the transition and query kernels fit four programs
# per SM instead of three, as built for sm_90 at D = 64 (triton 3.9, `benchmarks.kernel_resources`)
# spilling 408 bytes (transition, 4 warps), 1016 (transition, 2 warps) and 32 (queries, 4 warps):
# the transition kernel waits on latency, so more programs might hide it. On an H200 they did not
# (results/bench/launch_configs.json: at D = 128 / 64, 4 warps at 128 registers took 1.06x / 1.04x the
# time of 4 warps at 168, 2 warps 2.35x / 2.22x; the query kernel at 128 registers was within 0.5%).
TRANSITION = [dict(num_warps=4, maxnreg=168), dict(num_warps=4), dict(num_warps=4, maxnreg=128), dict(num_warps=2),
              dict(num_warps=8, maxnreg=128), dict(num_warps=8, maxnreg=168), dict(num_warps=8)]
QUERIES = [dict(num_warps=4), dict(num_warps=4, maxnreg=128), dict(num_warps=8)]
TRANSPORT = [dict(num_warps=4, num_stages=1), dict(num_warps=8, num_stages=1), dict(num_warps=8, num_stages=1, maxnreg=128),
             dict(num_warps=8, num_stages=2)]
# Rows of S per transport program (`coarse._transport_rows`), each with 4 warps and 1 or 2 stages: fewer
# rows, more programs (their shared inputs read from L2) to hide the chunk loop's latency.
TRANSPORT_ROWS = [(64, dict(num_warps=4, num_stages=2))] + [(rows, dict(num_warps=4, num_stages=stages))
                                                           for rows in (32, 16) for stages in (1, 2)]


DECODE = [dict(BN=bn, STAGES=stages, num_warps=warps) for bn in (64, 128) for stages in (1, 3) for warps in (4, 8)]
DECODE_SHAPES = [(1, 16384), (8, 16384), (1, 65536)]  # (batch, cached tokens)


def measure_decode(shapes) -> list[dict]:
    from benchmarks.kernels import graphed_decode_ms
    from path_eval.kernels.path_attn import decode
    H, D, steps = 24, 64, 64
    records = []
    default = decode._attend_launch
    try:
        for B, T in shapes:
            x = inputs(B, T + 2, H, D, True, False, seed=1)  # the cache, the eager step's token, the graph's
            splits = decode.default_splits(T, B * H, torch.device("cuda"))
            for config in DECODE:
                decode._attend_launch = lambda rows, sms, c=config: c
                ms = _or_none(lambda: graphed_decode_ms(x, T, steps, splits))
                records.append(dict(step="decode attend", D=D, B=B, H=H, T=T, splits=splits, config=config, ms=ms))
                log(records[-1])
            del x
            torch.cuda.empty_cache()
    finally:
        decode._attend_launch = default
    return records


def _or_none(time_it) -> float | None:
    """ms from `time_it()`, or None (logged) for a configuration that does not fit the GPU."""
    try:
        return time_it()
    except Exception as e:  # noqa: BLE001  (a configuration that does not fit the GPU is recorded as such)
        log("failed", repr(e)[:200])
        return None


def _timed(fn, warmup: int, rep: int) -> float | None:
    from triton.testing import do_bench
    return _or_none(lambda: do_bench(fn, warmup=warmup, rep=rep))


def measure(head_dims, T: int, warmup: int, rep: int, parts=("prep", "transport")) -> list[dict]:
    records = []
    for D in head_dims:
        H, B = (32 if D == 64 else 16), 65536 // T
        x = inputs(B, T, H, D, True, False)
        if "prep" in parts:
            records += measure_preparation(x, D, B, H, T, warmup, rep)
        if "transport" in parts:
            records += measure_transport(x, D, B, H, T, warmup, rep)
        del x
        torch.cuda.empty_cache()
    return records


def measure_preparation(x, D, B, H, T, warmup, rep) -> list[dict]:
    """`prepare_path` with the transition kernel's launch varied and the query kernel's fixed, then
    the reverse."""
    from path_eval.kernels.path_attn import prep
    q, k, w, beta = x["q"], x["k"], x["w"], x["beta"]
    records = []
    default_t, default_q = prep._transition_launch, prep._queries_launch
    try:
        for step, configs, slot in (("preparation", TRANSITION, "_transition_launch"),
                                    ("queries", QUERIES, "_queries_launch")):
            prep._transition_launch, prep._queries_launch = default_t, default_q  # one kernel varied at a time
            for config in configs:
                setattr(prep, slot, lambda c=config: c)
                ms = _timed(lambda: prep.prepare_path(q, k, w, beta, 64, False), warmup, rep)
                records.append(dict(step=step, D=D, B=B, H=H, T=T, config=config, ms=ms))
                log(records[-1])
    finally:
        prep._transition_launch, prep._queries_launch = default_t, default_q
    return records


def measure_transport(x, D, B, H, T, warmup, rep) -> list[dict]:
    """`super_chunk_transport_triton` at S = 8 under each launch at 64 rows of S a program, then each
    other rows-per-program candidate, beside the torch version it replaced."""
    from path_eval.kernels.path_attn import coarse, prep
    from path_eval.kernels.path_attn.chunks import naive_super_chunk_transport
    q, k, w, beta = x["q"], x["k"], x["w"], x["beta"]
    size = 8
    count = (T // 64 - 1) // size
    prepared = prep.prepare_path(q, k, w, beta, 64, True, coarse=True)
    records = []
    default_launch, default_rows = coarse._transport_launch, coarse._transport_rows
    # the launches at 64 rows a program (the rows before the rows sweep), then the rows candidates; each once
    candidates = [(min(D, 64), config) for config in TRANSPORT] + [c for c in TRANSPORT_ROWS if c[0] <= D]
    candidates = [c for i, c in enumerate(candidates) if c not in candidates[:i]]
    try:
        for rows, config in candidates:
            coarse._transport_launch, coarse._transport_rows = (lambda c=config: c), (lambda d, r=rows: r)
            ms = _timed(lambda: coarse.super_chunk_transport_triton(prepared.k32, w, prepared.tw, size, count, q.dtype),
                        warmup, rep)
            records.append(dict(step="transport", D=D, B=B, H=H, T=T, super_chunks=size, rows=rows, config=config, ms=ms))
            log(records[-1])
    finally:
        coarse._transport_launch, coarse._transport_rows = default_launch, default_rows

    def torch_transport():
        keys, U = naive_super_chunk_transport(prepared.transport, size, count)
        return keys.to(q.dtype), U.to(q.dtype)
    records.append(dict(step="transport torch", D=D, B=B, H=H, T=T, super_chunks=size, config=None,
                        ms=_timed(torch_transport, warmup, rep)))
    log(records[-1])
    return records


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/bench/launch_configs.json")
    p.add_argument("--head-dims", default="128,64")
    p.add_argument("--length", type=int, default=8192)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rep", type=int, default=50)
    p.add_argument("--parts", default="prep,transport",
                   help="prep (the preparation's two kernels), transport (the super-chunk transport), decode")
    args = p.parse_args(argv)
    parts = args.parts.split(",")
    if set(parts) - {"prep", "transport", "decode"}:
        p.error(f"--parts takes prep, transport and decode, not {args.parts}")
    import triton
    out = {"machine": torch.cuda.get_device_name(), "host": platform.node(), "torch": torch.__version__,
           "triton": triton.__version__,
           "command": "python -m benchmarks.launch_configs " + " ".join(argv or __import__("sys").argv[1:]),
           "records": (measure([int(d) for d in args.head_dims.split(",")], args.length, args.warmup, args.rep, parts)
                       if {"prep", "transport"} & set(parts) else []) + (measure_decode(DECODE_SHAPES) if "decode" in parts else [])}
    write_json_atomic(out, Path(args.out))
    for r in out["records"]:
        print(f"{r['step']:16s} D={r['D']:3d} B={r['B']} T={r['T']:<6d} rows={r.get('rows', '-')!s:3s} "
              f"{json.dumps(r['config']):55s} "
              f"{r['ms'] if r['ms'] is None else round(r['ms'], 3)}")


# ---------------------------------------------------------------- docs/benchmarks.md

def launch_table(records: list[dict]) -> str:
    """ms per call of each kernel step under each launch configuration."""
    rows = [[r["step"], str(r["D"]), kilo(r["B"] * r["T"]), str(r.get("rows", "-")),
             "-" if r["config"] is None else ", ".join(f"{k}={v}" for k, v in r["config"].items()),
             "failed" if r["ms"] is None else f"{r['ms']:.2f}"] for r in records]
    return table(["step", "D", "tokens", "rows", "configuration", "ms"], rows)


def decode_launch_table(records: list[dict]) -> str:
    """ms per token of the graphed decoding step under each launch of `_decode_attend`."""
    rows = [[str(r["B"]), kilo(r["T"]), str(r["splits"]), ", ".join(f"{k}={v}" for k, v in r["config"].items()),
             "failed" if r["ms"] is None else f"{r['ms']:.3f}"] for r in records]
    return table(["B", "cached tokens", "cache splits", "configuration", "ms per token"], rows)


def render_launch_configs(results: Path) -> str:
    parts = []
    for path in sorted((results / "bench").glob("launch_configs*.json")):
        data = load(path)
        parts += [kernel_source(path, results, data), launch_table(data["records"])]
    return "\n\n".join(parts)


def render_decode_launch_configs(results: Path) -> str:
    path = results / "bench" / "decode_launch_configs.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), decode_launch_table(data["records"])])


if __name__ == "__main__":
    main()
