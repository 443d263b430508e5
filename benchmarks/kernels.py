"""Attention kernels on the GPU: correctness first, then speed; writes results/bench/kernels.json.

Records {"op", "impl", "B", "H", "T", "D", "dtype", "ms", "fa_equiv_tflops"} (PaTH forwards also
"super_chunks": the coarse walk's chunks per super-chunk, 1 for none); ops path_fwd,
path_fox_fwd, fox_fwd, attn_fwd (B x T = 64K tokens, 32 heads of 64 / 16 of 128; or a fixed
`--batch` and `--heads`, as the PaTH paper's Figure 1: batch 32, 32 heads of 64), path_prefill_chunk
(64K tokens in 8K chunks on a cache, vs one forward) and path_decode (per token, one layer of a
760M-shaped model: 24 heads of 64, cache of T tokens; impl "path-eval" eager, "path-eval graph"
replayed from a CUDA graph, with "splits" the cache splits); path_prep times our preparation alone (the
two Triton launches of `prep.py`), path_prep_coarse the preparation with the coarse walk's
super-chunk transport. `--super-chunks` sweeps the coarse walk's S: impl "path-eval" is the
default S, "path-eval S=k" the others. FA-equivalent TFLOP/s = 4 B H T^2 D / 2 / time.
Method: random bf16 inputs (never zeros), triton.testing.do_bench (warm-up, median of repeats).

    python -m benchmarks.kernels --out results/bench/kernels.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from path_eval.kernels.path_attn.cache import PathKVCache
from path_eval.kernels.path_attn.decode import default_splits
from path_eval.kernels.path_attn.fwd import default_super_chunks, path_attention, prepare_walk
from path_eval.kernels.path_attn.prep import prepare_path
from path_eval.models.attention import AttentionInputs, torch_backend
from path_eval.numerics import relative_error
from path_eval.results.provenance import git_revision
from benchmarks.markdown import kernel_source, kilo, load, ratio, sci, table as markdown_table

TOKENS = 65536
GATED = {"path_fwd": (True, False), "path_fox_fwd": (True, True), "fox_fwd": (False, True), "attn_fwd": (False, False)}


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def inputs(B, T, H, D, transform, gate, seed=0, dtype=torch.bfloat16, device="cuda"):
    g = torch.Generator(device=device).manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, device=device)  # noqa: E731
    x = dict(q=r(B, T, H, D).to(dtype), k=r(B, T, H, D).to(dtype), v=r(B, T, H, D).to(dtype), scale=D ** -0.5)
    if transform:
        x["w"] = F.normalize(r(B, T, H, D), dim=-1)
        x["beta"] = 2 * torch.sigmoid(r(B, T, H))
    if gate:
        x["g"] = F.logsigmoid(r(B, T, H) + 4)  # fla's init keeps gates near 1
        x["gate_scale"] = x["scale"] if transform else 1.0
    return x


def tokens(x, a, b):
    """The inputs `x` cut to positions a:b (scalars kept)."""
    return {k: (v[:, a:b] if torch.is_tensor(v) else v) for k, v in x.items()}


def ours(x, super_chunks=None):
    return path_attention(**{k: v for k, v in x.items() if k not in ("qh", "kh", "vh")}, super_chunks=super_chunks)[0]


def ours_by_super_chunks(T, D, transform, sweep) -> dict[str, tuple]:
    """impl -> (forward, super_chunks): the default S as "path-eval", each other S of `sweep` beside it."""
    default = default_super_chunks(D, T) if transform else 1
    impls = {"path-eval": (ours, default)}
    for size in sweep if transform else ():
        if size != default:
            impls[f"path-eval S={size}"] = (lambda x, size=size: ours(x, size), size)
    return impls


ACCURATE = "path-eval accurate prep"  # --accurate-preparation's impl
WITHOUT_FLA = False  # --no-fla: fla's kernels left out (they do not change with ours; compiling them is slow)


def fla_impl(op):
    """fla's forward for `op`, or None when fla lacks it or is left out."""
    if WITHOUT_FLA:
        return None
    try:
        if op in ("path_fwd", "path_fox_fwd"):
            from fla.ops.path_attn.parallel import parallel_path_attn
            return lambda x: parallel_path_attn(x["q"], x["k"], x["v"], x["w"], x["beta"], x.get("g"), x["scale"])[0]
        if op == "fox_fwd":
            from fla.ops.forgetting_attn.parallel import parallel_forgetting_attn
            return lambda x: parallel_forgetting_attn(x["q"], x["k"], x["v"], x["g"], x["scale"])
        from fla.ops.attn.parallel import parallel_attn
        return lambda x: parallel_attn(x["q"], x["k"], x["v"], scale=x["scale"])
    except ImportError:
        return None


def sdpa(backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    chosen = {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION}[backend]

    def run(x):
        with sdpa_kernel([chosen]):
            return F.scaled_dot_product_attention(x["qh"], x["kh"], x["vh"], is_causal=True, scale=x["scale"])
    return run


def timed(fn, flops: float, **fields) -> dict:
    """A record of `fields` with fn's median ms (do_bench, 25 ms warm-up, 100 ms of runs) and the
    TFLOP/s a FlashAttention forward of `flops` would reach in that time."""
    ms = do_bench(fn, warmup=25, rep=100)
    return dict(**fields, ms=ms, fa_equiv_tflops=flops / ms / 1e9)


def check(args, out):
    """Ours vs the float32 torch backend (itself checked against the float64 definition) and vs fla."""
    rows = []
    for D in (64, 128):
        for T in args.check_lengths:
            for op, (transform, gate) in GATED.items():
                x = inputs(1, T, 4, D, transform, gate, seed=T + D)
                o = ours(x)
                a = AttentionInputs(x["q"].float(), x["k"].float(), x["v"].float(), x["scale"], x.get("w"),
                                    x.get("beta"), x.get("g"), x.get("gate_scale", 1.0), None)
                ref = torch_backend.attend(a, None, False)[0]
                row = dict(op=op, T=T, D=D, rel_vs_fp32_torch=relative_error(o, ref), max_abs_vs_fp32_torch=(o.float() - ref).abs().max().item())
                f = fla_impl(op)
                if f is not None:
                    try:
                        row.update(rel_fla_vs_fp32_torch=relative_error(f(x), ref))
                    except Exception as e:  # noqa: BLE001
                        row.update(fla_error=repr(e)[:200])
                rows.append(row)
                log("check", row)
                torch.cuda.empty_cache()
    for op in ("path_fwd", "path_fox_fwd", "fox_fwd"):  # decoding: prefill 4000 tokens, then 70 steps (a fold)
        transform, gate = GATED[op]
        x = inputs(2, 4070, 8, 64, transform, gate, seed=5)
        a = AttentionInputs(x["q"].float(), x["k"].float(), x["v"].float(), x["scale"], x.get("w"), x.get("beta"),
                            x.get("g"), x.get("gate_scale", 1.0), None)
        ref = torch_backend.attend(a, None, False)[0][:, 4000:]
        cache = PathKVCache()
        cache.attend(**tokens(x, 0, 4000))
        steps = [cache.attend(**tokens(x, t, t + 1)) for t in range(4000, 4070)]
        o = torch.cat(steps, 1)
        rows.append(dict(op=op.replace("_fwd", "_decode"), T=4000, D=64, rel_vs_fp32_torch=relative_error(o, ref),
                         max_abs_vs_fp32_torch=(o.float() - ref).abs().max().item()))
        log("check", rows[-1])
    out["checks"] = rows


def bench_forward(args, out, save):
    recs = out["records"]
    for D in args.head_dims:
        H = args.heads or (32 if D == 64 else 16)
        for T in args.lengths:
            B = args.batch or TOKENS // T
            flops = 4 * B * H * T * T * D / 2
            for op, (transform, gate) in GATED.items():
                if op not in args.ops:
                    continue
                x = inputs(B, T, H, D, transform, gate)
                ours_impls = ours_by_super_chunks(T, D, transform, args.super_chunks)
                impls = {impl: fn for impl, (fn, _) in ours_impls.items()}
                if transform and args.accurate_preparation:  # its cost: the products of the preparation in tf32x3
                    impls[ACCURATE] = lambda x: path_attention(**{k: v for k, v in x.items() if k not in ("qh", "kh", "vh")},
                                                               accurate_preparation=True)[0]
                f = fla_impl(op)
                if f is not None:
                    impls["fla"] = f
                if op == "attn_fwd":
                    x.update(qh=x["q"].transpose(1, 2), kh=x["k"].transpose(1, 2), vh=x["v"].transpose(1, 2))
                    impls["sdpa-cudnn"] = sdpa("sdpa-cudnn")
                    impls["sdpa-flash"] = sdpa("sdpa-flash")
                for impl, fn in impls.items():
                    try:
                        ms = do_bench(lambda: fn(x), warmup=args.warmup, rep=args.rep)
                    except Exception as e:  # noqa: BLE001  (an impl that cannot run this shape is recorded as such)
                        log("failed", op, impl, T, D, repr(e)[:200])
                        continue
                    recs.append(dict(op=op, impl=impl, B=B, H=H, T=T, D=D, dtype="bfloat16", ms=ms,
                                     fa_equiv_tflops=flops / ms / 1e9))
                    if transform and impl in ours_impls:
                        recs[-1]["super_chunks"] = ours_impls[impl][1]
                    log(recs[-1])
                    save()
                if op == "path_fwd":  # the preparation alone: the part of our time that grows with T, not T^2
                    ms = do_bench(lambda: prepare_path(x["q"], x["k"], x["w"], x["beta"], 64, False),
                                  warmup=args.warmup, rep=args.rep)
                    recs.append(dict(op="path_prep", impl="path-eval", B=B, H=H, T=T, D=D, dtype="bfloat16", ms=ms,
                                     fa_equiv_tflops=None, super_chunks=1))
                    log(recs[-1])
                    if args.accurate_preparation:
                        ms = do_bench(lambda: prepare_path(x["q"], x["k"], x["w"], x["beta"], 64, False, accurate=True),
                                      warmup=args.warmup, rep=args.rep)
                        recs.append(dict(op="path_prep", impl=ACCURATE, B=B, H=H, T=T, D=D, dtype="bfloat16", ms=ms,
                                         fa_equiv_tflops=None, super_chunks=1))
                        log(recs[-1])
                    for size in sorted({s for _, s in ours_impls.values()} - {1}):
                        ms = do_bench(lambda: prepare_walk(x["q"], x["k"], x["w"], x["beta"], None, 64, size, False),
                                      warmup=args.warmup, rep=args.rep)
                        recs.append(dict(op="path_prep_coarse", impl="path-eval", B=B, H=H, T=T, D=D,
                                         dtype="bfloat16", ms=ms, fa_equiv_tflops=None, super_chunks=size))
                        log(recs[-1])
                torch.cuda.empty_cache()


def bench_prefill(args, out, save):
    """64K tokens in 8K chunks on a PathKVCache (keys folded after each chunk) vs one forward."""
    for D in (64, 128):
        H = 32 if D == 64 else 16
        x = inputs(1, TOKENS, H, D, True, False)

        def chunked():
            cache = PathKVCache()
            for s in range(0, TOKENS, 8192):
                cache.attend(**tokens(x, s, s + 8192))
        for name, fn in (("path_prefill_chunk", chunked), ("path_fwd_one_pass", lambda: ours(x))):
            ms = do_bench(fn, warmup=1, rep=args.rep)
            out["records"].append(dict(op=name, impl="path-eval", B=1, H=H, T=TOKENS, D=D, dtype="bfloat16", ms=ms,
                                       fa_equiv_tflops=4 * H * TOKENS ** 2 * D / 2 / ms / 1e9, chunk=8192))
            log(out["records"][-1])
            save()
        torch.cuda.empty_cache()


def bench_decode(args, out, save):
    """Per-token time of one 760M-shaped layer's attention (24 heads of 64) on a cache of T tokens."""
    H, D, steps = 24, 64, 64
    for B in (1, 8):
        for T in args.decode_lengths:
            x = inputs(B, T + steps, H, D, True, False, seed=1)
            # ours: wall clock of one fold period (64 tokens) per measurement, so the amortised fold and
            # the host's launch overhead are included; the token slices are cut before the clock starts
            one_by_one = [tokens(x, t, t + 1) for t in range(T, T + steps)]
            times = []
            for rep in range(4):  # the first run compiles
                cache = PathKVCache()
                cache.attend(**tokens(x, 0, T))
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for tok in one_by_one:
                    cache.attend(**tok)
                torch.cuda.synchronize()
                times.append((time.perf_counter() - t0) / steps * 1e3)
                del cache
            rec = dict(op="path_decode", impl="path-eval", B=B, H=H, T=T, D=D, dtype="bfloat16",
                       ms=sorted(times[1:])[1], fa_equiv_tflops=None)
            out["records"].append(rec)
            log(rec)
            auto = default_splits(T, B * H, torch.device("cuda"))
            for factor in args.decode_split_factors:
                ms = graphed_decode_ms(x, T, steps, auto * factor)
                graphed = dict(rec, impl="path-eval graph" + ("" if factor == 1 else f" splits x{factor}"),
                               ms=ms, splits=auto * factor)
                out["records"].append(graphed)
                log(graphed)
            # fla: the decode branch of fla.layers.path_attn (rank-one update of every cached key, concatenation,
            # attn_decoding_one_step over the flattened batch)
            try:
                from fla.ops.attn.decoding import attn_decoding_one_step
                k_cache = x["k"][:, :T].clone()
                v_cache = x["v"][:, :T].clone()

                def fla_step(t, k_cache, v_cache):
                    w, beta = x["w"][:, t:t + 1], x["beta"][:, t:t + 1]
                    kf = k_cache.float()
                    kf = kf - beta[..., None] * (kf * w).sum(-1, keepdim=True) * w
                    k_all = torch.cat([kf.to(k_cache.dtype), x["k"][:, t:t + 1]], 1)
                    v_all = torch.cat([v_cache, x["v"][:, t:t + 1]], 1)
                    L = k_all.shape[1]
                    cu = torch.arange(0, (B + 1) * L, L, device="cuda", dtype=torch.int32)
                    attn_decoding_one_step(x["q"][:, t:t + 1].reshape(1, B, H, D), k_all.reshape(1, B * L, H, D),
                                           v_all.reshape(1, B * L, H, D), cu_seqlens=cu, scale=x["scale"])
                    return k_all, v_all
                times = []
                for rep in range(3):
                    kc, vc = k_cache, v_cache
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for t in range(T, T + 16):
                        kc, vc = fla_step(t, kc, vc)
                    torch.cuda.synchronize()
                    times.append((time.perf_counter() - t0) / 16 * 1e3)
                rec = dict(rec, impl="fla", ms=sorted(times)[1])
                out["records"].append(rec)
                log(rec)
            except Exception as e:  # noqa: BLE001
                log("fla decode failed", repr(e)[:300])
            # plain SDPA decode of the same shape, on a preallocated cache (no copies)
            q1 = x["q"][:, T:T + 1].transpose(1, 2)
            kh, vh = x["k"][:, :T].transpose(1, 2).contiguous(), x["v"][:, :T].transpose(1, 2).contiguous()
            ms = do_bench(lambda: F.scaled_dot_product_attention(q1, kh, vh, scale=x["scale"]), warmup=10, rep=args.rep)
            loop = []  # the same call timed as ours is: wall clock over 64 steps, launch overhead included
            for _ in range(3):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(steps):
                    F.scaled_dot_product_attention(q1, kh, vh, scale=x["scale"])
                torch.cuda.synchronize()
                loop.append((time.perf_counter() - t0) / steps * 1e3)
            rec = dict(rec, impl="sdpa", ms=ms, ms_wall_loop=sorted(loop)[1])
            out["records"].append(rec)
            log(rec)
            save()

            torch.cuda.empty_cache()


def graphed_decode_ms(x, T: int, steps: int, splits: int) -> float:
    """Wall clock per token of one layer's decoding step replayed from a CUDA graph, as it runs
    inside a captured whole-model step (`path_eval.models.decode_graph`): the host's `advance` and
    the folds every 64 tokens included. The replayed token's inputs stay fixed; their values do
    not change the step's work."""
    cache = PathKVCache()
    cache.attend(**tokens(x, 0, T))
    repeats = 4
    cache.reserve(repeats * steps + 1)
    cache.attend(**tokens(x, T, T + 1), splits=splits)  # allocates the tail, compiles this launch shape
    token = tokens(x, T + 1, T + 2)
    graph = torch.cuda.CUDAGraph()
    with cache.capturing(), torch.cuda.graph(graph):
        cache.attend(**token, splits=splits)
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            graph.replay()
            cache.advance()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / steps * 1e3)
    return sorted(times[1:])[1]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/bench/kernels.json")
    p.add_argument("--parts", default="check,forward,prefill,decode")
    p.add_argument("--lengths", default="4096,8192,16384,32768,65536")
    p.add_argument("--check-lengths", default="4096,65536")
    p.add_argument("--decode-lengths", default="4096,16384,65536")
    p.add_argument("--decode-split-factors", default="1",
                   help="graphed decoding: multiples of the default cache splits to time, e.g. 1,2,4")
    p.add_argument("--ops", default=",".join(GATED), help="the forward part's ops")
    p.add_argument("--head-dims", default="64,128", help="the forward part's head dims, in this order")
    p.add_argument("--super-chunks", default="",
                   help="coarse-walk sizes S to time beside the default for PaTH forwards, e.g. 1,4,8")
    p.add_argument("--batch", type=int, default=0,
                   help="the forward part's batch at every length (0: B x T = 64K tokens); the PaTH paper's "
                        "Figure 1 times batch 32, 32 heads of 64, 1K-16K: --batch 32 --heads 32 --head-dims 64")
    p.add_argument("--heads", type=int, default=0, help="the forward part's heads (0: 32 of 64, 16 of 128)")
    p.add_argument("--no-fla", action="store_true", help="leave fla's kernels out (timings and checks)")
    p.add_argument("--accurate-preparation", action="store_true",
                   help=f"PaTH forwards and preparations also with the preparation's products in float32 accuracy "
                        f"(impl '{ACCURATE}'; benchmarks/beta_near_two.py measures their accuracy)")
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--rep", type=int, default=100)
    args = p.parse_args(argv)
    global WITHOUT_FLA
    WITHOUT_FLA = args.no_fla
    args.lengths = [int(t) for t in args.lengths.split(",")]
    args.check_lengths = [int(t) for t in args.check_lengths.split(",") if t]  # "" = decoding checks only
    args.decode_lengths = [int(t) for t in args.decode_lengths.split(",")]
    args.decode_split_factors = [int(f) for f in args.decode_split_factors.split(",")]
    if any(f < 1 for f in args.decode_split_factors):
        p.error(f"--decode-split-factors takes multiples of 1 or more, not {args.decode_split_factors}")
    args.ops = args.ops.split(",")
    if set(args.ops) - set(GATED):
        p.error(f"unknown --ops {sorted(set(args.ops) - set(GATED))}: choose from {', '.join(GATED)}")
    args.head_dims = [int(d) for d in args.head_dims.split(",")]
    if set(args.head_dims) - {64, 128}:
        p.error(f"--head-dims takes 64 and 128 (the heads of 64K-token calls: 32 of 64, 16 of 128), not {args.head_dims}")
    if args.batch < 0 or args.heads < 0:
        p.error(f"--batch and --heads take counts of 1 or more (0: the defaults), not {args.batch}, {args.heads}")
    args.super_chunks = [int(s) for s in args.super_chunks.split(",") if s]
    if any(s < 1 for s in args.super_chunks):
        p.error(f"--super-chunks takes sizes of 1 or more, not {args.super_chunks}")
    import triton
    out = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "command": "python -m benchmarks.kernels " + " ".join(argv or __import__("sys").argv[1:]),
           "revision": git_revision(), "records": []}
    try:
        import fla
        out["fla"] = fla.__version__
    except ImportError:
        pass
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)

    def save():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1))
        tmp.replace(path)
    parts = {"check": check, "forward": bench_forward, "prefill": bench_prefill, "decode": bench_decode}
    for name in args.parts.split(","):  # in the order given
        log("part", name)
        parts[name](args, out, save) if name != "check" else parts[name](args, out)
        save()
    table(out)


def table(out) -> None:
    """A short table: FA-equivalent TFLOP/s per op and impl, and decode ms per token."""
    by = {}
    for r in out["records"]:
        by.setdefault((r["op"], r["D"], r["B"] if r["op"] == "path_decode" else None), {}).setdefault(r["T"], {})[r["impl"]] = r
    for (op, D, B), cols in by.items():
        for T, impls in sorted(cols.items()):
            cells = ", ".join(f"{i} {r['ms']:.3f} ms" + (f" {r['fa_equiv_tflops']:.0f} TF" if r.get("fa_equiv_tflops") else "")
                              for i, r in impls.items())
            print(f"{op:20s} D={D:<4d} B={B} T={T:<6d} {cells}")


# ---------------------------------------------------------------- docs/benchmarks.md

FORWARD_COLUMNS = [  # (op, impl, header) of the forward table, in column order
    ("attn_fwd", "sdpa-cudnn", "SDPA cuDNN"),
    ("attn_fwd", "sdpa-flash", "SDPA flash"),
    ("attn_fwd", "path-eval", "attention ours"),
    ("attn_fwd", "fla", "attention fla"),
    ("path_fwd", "path-eval", "PaTH ours"),
    ("path_fwd", "fla", "PaTH fla"),
    ("path_fox_fwd", "path-eval", "PaTH-FoX ours"),
    ("path_fox_fwd", "fla", "PaTH-FoX fla"),
    ("fox_fwd", "path-eval", "FoX ours"),
    ("fox_fwd", "fla", "FoX fla"),
]
CHECK_NAMES = {"path_fwd": "PaTH forward", "path_fox_fwd": "PaTH-FoX forward", "fox_fwd": "FoX forward",
               "attn_fwd": "attention forward", "path_decode": "PaTH decoding",
               "path_fox_decode": "PaTH-FoX decoding", "fox_decode": "FoX decoding"}


# Figure 1's columns: SDPA's two backends and each mechanism's ours and fla's (no plain attention, ours or fla's)
FIGURE1_COLUMNS = [(op, impl, header) for op, impl, header in FORWARD_COLUMNS
                   if op != "attn_fwd" or impl.startswith("sdpa")]


def figure1_table(records: list[dict]) -> str:
    """One row a length: each forward's ms and FlashAttention-equivalent TFLOP/s (causal attention's
    4·B·H·T²·D/2, so that every mechanism is measured on one scale). `records` are of one shape
    (`figure1_shape`)."""
    by_key = {(r["op"], r["impl"], r["T"]): r for r in records}
    rows = []
    for t in sorted({r["T"] for r in records}):
        cells = []
        for op, impl, _ in FIGURE1_COLUMNS:
            r = by_key.get((op, impl, t))
            cells.append("-" if r is None else f"{r['ms']:.2f} / {r['fa_equiv_tflops']:.0f}")
        rows.append([kilo(t), *cells])
    return markdown_table(["T"] + [f"{header} ms / TFLOP/s" for _, _, header in FIGURE1_COLUMNS], rows)


def check_table(checks: list[dict]) -> str:
    rows = [[CHECK_NAMES.get(c["op"], c["op"]), str(c["T"]), str(c["D"]), sci(c["rel_vs_fp32_torch"]),
             sci(c["max_abs_vs_fp32_torch"]), sci(c.get("rel_fla_vs_fp32_torch"))] for c in checks]
    return markdown_table(["kernel", "T", "D", "ours rel.", "ours max abs.", "fla rel."], rows)


def forward_speed_table(records: list[dict]) -> str:
    by_key = {(r["op"], r["impl"], r["D"], r["T"]): r for r in records}
    shapes = sorted({(r["D"], r["T"]) for r in records if r["op"] == "path_fwd"})
    rows = []
    for d, t in shapes:
        tflops = {(op, impl): by_key[(op, impl, d, t)]["fa_equiv_tflops"]
                  for op, impl, _ in FORWARD_COLUMNS if (op, impl, d, t) in by_key}
        row = [str(d), kilo(t)] + [f"{tflops[(op, impl)]:.0f}" if (op, impl) in tflops else "-"
                                   for op, impl, _ in FORWARD_COLUMNS]
        best_sdpa = max(tflops[("attn_fwd", "sdpa-cudnn")], tflops[("attn_fwd", "sdpa-flash")])
        path, path_fox = tflops[("path_fwd", "path-eval")], tflops[("path_fox_fwd", "path-eval")]
        row.append(f"{ratio(path / best_sdpa)} / {ratio(path_fox / best_sdpa)}")
        row.append(f"{ratio(path / tflops[('path_fwd', 'fla')])} / {ratio(path_fox / tflops[('path_fox_fwd', 'fla')])}")
        prep = by_key.get(("path_prep", "path-eval", d, t))
        row.append("-" if prep is None else f"{prep['ms']:.2f}")
        rows.append(row)
    return markdown_table(["D", "T"] + [header for _, _, header in FORWARD_COLUMNS]
                 + ["ours / best SDPA (PaTH / PaTH-FoX)", "ours / fla (PaTH / PaTH-FoX)", "prep ms"], rows)


def record_ms(records: list[dict], op: str, impl: str, d: int, t: int) -> float | None:
    """The one record's ms of `op` by `impl` at head dim d and T tokens; None when not timed."""
    return next((r["ms"] for r in records if (r["op"], r["impl"], r["D"], r["T"]) == (op, impl, d, t)), None)


def forward_targets_table(data: dict) -> str:
    """PaTH and PaTH-FoX forward ms per (D, T) at the record's revision and at each of its
    `earlier_runs`, fla's and the faster SDPA's, and the speed ratios that issue 18's targets name."""
    def cell(v):
        return "-" if v is None else f"{v:.2f}"

    earlier = data.get("earlier_runs", [])
    rows = []
    for op in ("path_fwd", "path_fox_fwd"):
        shapes = sorted({(r["D"], r["T"]) for r in data["records"] if r["op"] == op}, key=lambda s: (-s[0], s[1]))
        for d, t in shapes:
            ours = record_ms(data["records"], op, "path-eval", d, t)
            fla = record_ms(data["records"], op, "fla", d, t)
            sdpa = min(v for v in (record_ms(data["records"], "attn_fwd", impl, d, t)
                                   for impl in ("sdpa-cudnn", "sdpa-flash")) if v is not None)
            before = [record_ms(run["records"], op, "path-eval", d, t) for run in earlier]
            rows.append([CHECK_NAMES[op].removesuffix(" forward"), str(d), kilo(t), *map(cell, before), cell(ours),
                         cell(fla), f"{sdpa:.2f}", ratio(sdpa / ours), "-" if fla is None else ratio(fla / ours)])
    names = [f"ms at {run['revision']}" for run in earlier] + [f"ms at {data['revisions']['records']}"]
    return markdown_table(["kernel", "D", "T", *names, "fla ms", "best SDPA ms", "ours x SDPA speed", "ours x fla speed"], rows)


def coarse_walk(records: list[dict]) -> str | None:
    """PaTH / PaTH-FoX forward ms by the coarse walk's super-chunk size S, when the records sweep S
    (`--super-chunks`), beside fla and the faster SDPA of the same session; None otherwise."""
    sweep = [r for r in records if r["op"] in ("path_fwd", "path_fox_fwd") and "super_chunks" in r
             and r["impl"].startswith("path-eval")]
    sizes = sorted({r["super_chunks"] for r in sweep})
    if len(sizes) < 2:
        return None
    ms = {(r["op"], r["D"], r["T"], r["super_chunks"]): r["ms"] for r in sweep}
    fla = {(r["op"], r["D"], r["T"]): r["ms"] for r in records if r["impl"] == "fla"}
    sdpa: dict[tuple, float] = {}
    for r in records:
        if r["impl"].startswith("sdpa"):
            sdpa[(r["D"], r["T"])] = min(r["ms"], sdpa.get((r["D"], r["T"]), float("inf")))
    prep = {(r["D"], r["T"], r["super_chunks"]): r["ms"] for r in records
            if r["op"] in ("path_prep", "path_prep_coarse") and "super_chunks" in r}
    rows = []
    for op, d, t in sorted({key[:3] for key in ms}, key=lambda k: (k[1], k[0] != "path_fwd", k[2])):
        timed = {s: ms[(op, d, t, s)] for s in sizes if (op, d, t, s) in ms}
        fastest = min(timed, key=timed.get)
        theirs = fla.get((op, d, t))
        best_sdpa = sdpa.get((d, t))
        rows.append([CHECK_NAMES[op], str(d), kilo(t)] + [f"{timed[s]:.2f}" if s in timed else "-" for s in sizes]
                    + [str(fastest), ratio(timed[1] / timed[fastest]) if 1 in timed else "-",
                       "-" if theirs is None else f"{theirs:.2f}",
                       "-" if theirs is None else ratio(theirs / timed[fastest]),
                       "-" if best_sdpa is None else ratio(best_sdpa / timed[fastest])]
                    + [f"{prep[(d, t, s)]:.2f}" if (d, t, s) in prep else "-" for s in sizes])
    return markdown_table(["kernel", "D", "T"] + [f"S={s} ms" for s in sizes]
                 + ["fastest S", "fastest / S=1", "fla ms", "fastest vs fla", "fastest vs best SDPA"]
                 + [f"prep S={s} ms" for s in sizes], rows)


FOX_OVERHEAD_TARGET = 0.15  # issue 47: PaTH-FoX's forward within 15% of PaTH's


def fox_overhead_table(runs: list[list[dict]]) -> str:
    """PaTH-FoX's forward time over PaTH's, per (D, T) and per run (each run one process, so each ratio
    is from one session), against the 15% target; a shape a run did not time is '-'."""
    def joined(values, fmt):
        return " / ".join("-" if v is None else fmt(v) for v in values)

    shapes = sorted({(r["D"], r["T"]) for records in runs for r in records
                     if r["op"] == "path_fox_fwd" and r["impl"] == "path-eval"})
    rows = []
    for d, t in shapes:
        path = [record_ms(records, "path_fwd", "path-eval", d, t) for records in runs]
        fox = [record_ms(records, "path_fox_fwd", "path-eval", d, t) for records in runs]
        over = [None if a is None or b is None else b / a - 1 for a, b in zip(path, fox)]
        timed = [o for o in over if o is not None]
        within = sum(o <= FOX_OVERHEAD_TARGET for o in timed)
        verdict = ("-" if not timed else "yes" if within == len(timed) else "no" if within == 0
                   else f"in {within} of {len(timed)} runs")
        rows.append([str(d), kilo(t), joined(path, "{:.2f}".format), joined(fox, "{:.2f}".format),
                     joined(over, lambda o: f"{100 * o:+.1f}%"), verdict])
    runs_named = " / ".join(f"run {i + 1}" for i in range(len(runs)))
    return markdown_table(["D", "T", f"PaTH ms ({runs_named})", f"PaTH-FoX ms ({runs_named})",
                           f"PaTH-FoX over PaTH ({runs_named})", f"within {100 * FOX_OVERHEAD_TARGET:.0f}%"], rows)


def render_fox_overhead(results: Path) -> str:
    """Each results/bench/fox_overhead_*.json: the outputs of `benchmarks.kernels --parts forward` with
    PaTH's and PaTH-FoX's forwards, one per run, kept whole under `runs`, each with the revision it ran at."""
    parts = []
    for path in sorted((results / "bench").glob("fox_overhead_*.json")):
        data = load(path)
        commands = "; ".join(f"run {i + 1} (revision {run['revision']}): `{run['command']}`"
                             for i, run in enumerate(data["runs"]))
        parts += [f"{kernel_source(path, results, data)} {commands[:1].upper()}{commands[1:]}.",
                  fox_overhead_table([run["records"] for run in data["runs"]])]
    return "\n\n".join(parts) or ("No record yet (`results/bench/fox_overhead_*.json`): the outputs of `python -m "
                                   "benchmarks.kernels --parts forward --ops path_fwd,path_fox_fwd` on a GPU host.")


# issue 47's kernel targets: (head dim, T or None for every length, the other side, least speed ratio)
KERNEL_TARGETS = ((128, None, "fla", 1.5), (128, 8192, "sdpa-cudnn", 0.45), (64, 8192, "sdpa-cudnn", 0.5))
KERNEL_MOONSHOT = (65536, "sdpa-cudnn", 0.8)  # at both head dims


def kernel_targets_table(records: list[dict]) -> str:
    """PaTH's forward against fla's and cuDNN's causal attention per (D, T), as speed ratios (their
    ms over ours: above 1, ours is faster), then issue 47's targets, each met or not at every length
    it names; a target no record covers is said to be untimed, never met."""
    shapes = sorted({(r["D"], r["T"]) for r in records if r["op"] == "path_fwd" and r["impl"] == "path-eval"})
    speed = {}
    rows = []
    for d, t in shapes:
        ours = record_ms(records, "path_fwd", "path-eval", d, t)
        theirs = {"fla": record_ms(records, "path_fwd", "fla", d, t),
                  **{impl: record_ms(records, "attn_fwd", impl, d, t) for impl in ("sdpa-cudnn", "sdpa-flash")}}
        for impl, other in theirs.items():
            if other is not None:
                speed[(d, t, impl)] = other / ours
        rows.append([str(d), kilo(t), f"{ours:.2f}", *("-" if v is None else f"{v:.2f}" for v in theirs.values()),
                     *("-" if (d, t, impl) not in speed else ratio(speed[(d, t, impl)]) for impl in theirs)])
    names = {"fla": "fla's PaTH", "sdpa-cudnn": "cuDNN"}
    lines = []
    for d, t, impl, least in KERNEL_TARGETS + tuple((d, *KERNEL_MOONSHOT) for d in (64, 128)):
        lengths = [t] if t is not None else [tt for dd, tt in shapes if dd == d]
        got = {tt: speed.get((d, tt, impl)) for tt in lengths}
        timed = {tt: v for tt, v in got.items() if v is not None}
        where = "every length" if t is None else kilo(t)
        moonshot = " (moonshot)" if (t, impl, least) == KERNEL_MOONSHOT else ""
        short = [f"{kilo(tt)} {ratio(v)}" for tt, v in timed.items() if v < least]
        untimed = [kilo(tt) for tt, v in got.items() if v is None]
        if short:
            verdict = "not met (" + ", ".join(short) + ")"
        elif untimed or not got:
            verdict = "untimed" + (f" at {', '.join(untimed)}" if untimed and timed else "")
        else:
            verdict = "met"
        lines.append(f"- D = {d}, {where}: at least {ratio(least)} {names[impl]}'s speed{moonshot}: {verdict}.")
    return "\n\n".join([markdown_table(["D", "T", "PaTH ms", "fla PaTH ms", "cuDNN ms", "SDPA flash ms",
                                         "x fla", "x cuDNN", "x SDPA flash"], rows), "\n".join(lines)])


def render_each_bench(results: Path, pattern: str, table_of, missing: str) -> str:
    """Each results/bench/`pattern` (a `benchmarks.kernels` output): its source, revision and command,
    then `table_of` its records; `missing` where there is none."""
    parts = []
    for path in sorted((results / "bench").glob(pattern)):
        data = load(path)
        parts += [f"{kernel_source(path, results, data)} Revision {data['revision']}; `{data['command']}`.",
                  table_of(data["records"])]
    return "\n\n".join(parts) or missing


def render_kernel_targets(results: Path) -> str:
    """Each results/bench/kernel_targets_*.json: `benchmarks.kernels --parts forward --ops path_fwd,attn_fwd
    --head-dims 64,128` against issue 47's kernel targets."""
    return render_each_bench(results, "kernel_targets_*.json", kernel_targets_table,
                             "No record yet (`results/bench/kernel_targets_*.json`): `PARTS=forward KARGS=\"--ops "
                             "path_fwd,attn_fwd --head-dims 64,128\" bash benchmarks/gpu_session.sh kernels`.")


def accurate_prep_table(records: list[dict]) -> str:
    """What `accurate_preparation=True` costs: per forward and head dim and length, the shipped
    preparation's ms and the accurate one's, for the whole forward and for the preparation alone."""
    rows = []
    for op in ("path_fwd", "path_fox_fwd", "path_prep"):
        for d, t in sorted({(r["D"], r["T"]) for r in records if r["op"] == op}):
            shipped = record_ms(records, op, "path-eval", d, t)
            accurate = record_ms(records, op, "path-eval accurate prep", d, t)
            if shipped is None or accurate is None:
                continue
            rows.append([CHECK_NAMES.get(op, "PaTH preparation alone"), str(d), kilo(t), f"{shipped:.2f}",
                         f"{accurate:.2f}", f"{100 * (accurate / shipped - 1):+.1f}%"])
    return markdown_table(["kernel", "D", "T", "shipped ms", "accurate preparation ms", "accurate over shipped"], rows)


def render_accurate_prep(results: Path) -> str:
    """Each results/bench/kernels_accurate_prep_*.json (`gpu_session.sh prep-cost`)."""
    return render_each_bench(results, "kernels_accurate_prep_*.json", accurate_prep_table,
                             "No record yet (`results/bench/kernels_accurate_prep_*.json`): `bash "
                             "benchmarks/gpu_session.sh prep-cost` on a GPU host writes one.")


def chunked_prefill_table(records: list[dict]) -> str:
    one_pass = {(r["D"], r["H"], r["T"]): r for r in records if r["op"] == "path_fwd_one_pass"}
    rows = []
    for r in (r for r in records if r["op"] == "path_prefill_chunk"):
        full = one_pass.get((r["D"], r["H"], r["T"]))
        rows.append([str(r["H"]), str(r["D"]), kilo(r["T"]), kilo(r["chunk"]), f"{r['ms']:.1f}",
                     "-" if full is None else f"{full['ms']:.1f}", "-" if full is None else ratio(r["ms"] / full["ms"])])
    return markdown_table(["heads", "D", "tokens", "chunk", "chunked prefill ms", "one forward ms", "prefill / forward"], rows)


def decode_table(records: list[dict]) -> str:
    by_key = {(r["impl"], r["B"], r["T"]): r for r in records if r["op"] == "path_decode"}
    graphed = any(impl == "path-eval graph" for impl, _, _ in by_key)
    rows = []
    for b, t in sorted({(b, t) for _, b, t in by_key}):
        ours, fla, sdpa = by_key[("path-eval", b, t)], by_key.get(("fla", b, t)), by_key[("sdpa", b, t)]
        graph = by_key.get(("path-eval graph", b, t))
        rows.append([str(b), kilo(t), f"{ours['ms']:.3f}"]
                    + ([] if not graphed else ["-" if graph is None else f"{graph['ms']:.3f}"])
                    + ["-" if fla is None else f"{fla['ms']:.3f}", f"{sdpa['ms']:.3f}", f"{sdpa['ms_wall_loop']:.3f}",
                       "-" if fla is None else f"{fla['ms'] / ours['ms']:.1f}x", ratio(ours["ms"] / sdpa["ms"])]
                    + ([] if not graphed else ["-" if graph is None else ratio(graph["ms"] / sdpa["ms"])]))
    any_record = next(iter(by_key.values()))
    return (f"One layer's attention: {any_record['H']} heads of {any_record['D']}, {any_record['dtype']}.\n\n"
            + markdown_table(["B", "cached tokens", "ours ms/token"] + (["ours graphed ms/token"] if graphed else [])
                    + ["fla ms/token", "SDPA ms (GPU)", "SDPA ms (loop)", "ours faster than fla by", "ours / SDPA (GPU)"]
                    + (["graphed / SDPA (GPU)"] if graphed else []), rows))


def render_accuracy(results: Path) -> str:
    path = results / "bench" / "kernels.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), check_table(data["checks"])])


def render_forward_speed(results: Path) -> str:
    """The shipped forwards against fla and SDPA (issue 18's targets), and their accuracy then."""
    path = results / "bench" / "kernels_forward_h200.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), forward_targets_table(data),
                        *([check_table(data["checks"])] if data.get("checks") else [])])


def render_first_forwards(results: Path) -> str:
    path = results / "bench" / "kernels.json"
    data = load(path)
    first = next(r for r in data["records"] if r["op"] == "path_fwd")
    return "\n\n".join([kernel_source(path, results, data) + f" {first['dtype']}, B x T = "
                        f"{kilo(first['B'] * first['T'])} tokens per call.", forward_speed_table(data["records"])])


def render_coarse_walk(results: Path) -> str:
    parts = []
    for path in sorted((results / "bench").glob("kernels_coarse_walk*.json")):
        data = load(path)
        sweep = coarse_walk(data["records"])
        if sweep is not None:
            parts += [kernel_source(path, results, data), sweep]
    return "\n\n".join(parts)


def render_chunked_prefill(results: Path) -> str:
    path = results / "bench" / "kernels.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), chunked_prefill_table(data["records"])])


def render_decoding(results: Path) -> str:
    """The decoding step of the first run, then of the shipped launch (kernels_decode.json)."""
    parts = []
    for name in ("kernels.json", "kernels_decode.json"):
        path = results / "bench" / name
        data = load(path)
        parts += [kernel_source(path, results, data), decode_table(data["records"])]
    return "\n\n".join(parts)



def figure1_shape(records: list[dict]) -> list[dict]:
    """The records of Figure 1's shape (batch 32, 32 heads of 64): a run given further head dims or
    batches (KARGS) keeps its other records out of the table, which has no column for them."""
    return [r for r in records if (r["B"], r["H"], r["D"]) == (32, 32, 64)]


def render_figure1(results: Path) -> str:
    """The PaTH paper's Figure 1 setting (batch 32, 32 heads of 64, 1K-16K), one table per machine's
    JSON: forwards, the kernels an evaluation runs."""
    parts = []
    for path in sorted((results / "bench").glob("figure1_*.json")):
        data = load(path)
        records = figure1_shape(data["records"])
        if records:  # a run whose every forward failed has none
            parts += [kernel_source(path, results, data) + f" {records[0]['dtype']} forwards, batch 32, 32 heads of 64.",
                      figure1_table(records)]
    return "\n\n".join(parts) or ("No record yet (`results/bench/figure1_*.json`): `bash benchmarks/gpu_session.sh "
                                   "figure1` on a GPU host writes one.")


if __name__ == "__main__":
    main()
