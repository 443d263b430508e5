"""PaTH's forward in 16 bits as beta approaches 2, against the float64 definition over long sequences.

    python -m benchmarks.beta_near_two --out results/bench/beta_near_two_h200.json          # bf16, 4K-64K
    python -m benchmarks.beta_near_two --device cpu --dtype float16 --lengths 256,1024,2048 \
        --head-dims 64 --out results/bench/beta_near_two_cpu.json                           # Triton's interpreter

The PaTH paper warns that beta near 2 can be numerically unstable in bf16. Every transform
H = I - beta w w^T with beta in (0, 2) shrinks the w direction by |1 - beta| < 1, so a rounding error
made early fades as a query walks back through the chunks; at beta = 2 (a reflection, which the
model's beta = 2 sigmoid(.) in float32 reaches exactly for large logits) nothing shrinks, and the
errors of the 16-bit products along the walk add up with the distance. This bench measures how far.

Per head dim, length, w law (random unit vectors, or nearly parallel ones, which make the UT
transform's I + A ill-conditioned), variant (PaTH; PaTH-FoX) and beta (1.0 as the baseline, 1.9,
1.99, 2.0, the same at every position): q, k, v drawn in float32 and rounded to the 16-bit dtype, w
and beta float32 as the model gives them; our forward (`path_attention`, as the model runs it, and
with `accurate_preparation`: the preparation's products in float32 accuracy), and fla's
(`parallel_path_attn`, unless --no-fla or absent) against `naive_attention` in float64 on the same
rounded inputs, over the last --rows query rows (the longest walks; the definition of a 64K sequence
in full would hold 32 GiB of logits a head). Each error is norm-wise (`relative_error`); beside it
the output's own rounding (the definition rounded to the 16-bit dtype), and whether ours stays within
the half-precision tests' bound (bf16 1.5e-2, fp16 3e-3): "(over)" in the table where it does not.

Kernel configurations are pinned (ours: PATH_EVAL_AUTOTUNE=0, fla's autotuners to one configuration:
`training.autotune`): this measures accuracy, not speed. The JSON is written after each case.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.end_to_end import machine
from benchmarks.markdown import load, sci, source, table
from path_eval.atomic_files import write_json_atomic
from path_eval.errors import PathEvalError

BOUND = {"bfloat16": 1.5e-2, "float16": 3e-3}  # tests/kernels/test_path_attn.py's half-precision bounds
W_LAWS = ("random", "correlated")
VARIANTS = ("path", "path_fox")


def numbers(text: str, kind, option: str) -> list:
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PathEvalError(f"{option} {text}: give comma-separated numbers") from None
    if not values:
        raise PathEvalError(f"{option} is empty: give at least one value")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/beta_near_two_h200.json"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", choices=sorted(BOUND), default="bfloat16")
    parser.add_argument("--lengths", default="4096,16384,65536")
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--betas", default="1.0,1.9,1.99,2.0")
    parser.add_argument("--w", default=",".join(W_LAWS), help="w laws: random, correlated")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=256, help="the last query rows compared")
    parser.add_argument("--no-fla", action="store_true", help="leave fla's forward out")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no case after this many seconds")
    args = parser.parse_args(argv)
    args.lengths, args.head_dims = numbers(args.lengths, int, "--lengths"), numbers(args.head_dims, int, "--head-dims")
    args.betas = numbers(args.betas, float, "--betas")
    args.w, args.variants = args.w.split(","), args.variants.split(",")
    if set(args.w) - set(W_LAWS) or set(args.variants) - set(VARIANTS):
        raise PathEvalError(f"--w takes {', '.join(W_LAWS)} and --variants {', '.join(VARIANTS)}")
    if not all(0 < b <= 2 for b in args.betas):
        raise PathEvalError(f"--betas {args.betas}: PaTH's beta lies in (0, 2]")
    if min(args.lengths + args.head_dims + [args.heads, args.rows]) < 1:
        raise PathEvalError("--lengths, --head-dims, --heads and --rows take 1 or more")
    return args


def case_inputs(T: int, H: int, D: int, w_law: str, variant: str, beta: float, dtype, device: str, seed: int):
    """q, k, v rounded to `dtype`; w, beta (and PaTH-FoX's log gates) float32; all on `device`."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    q, k, v = (r(1, T, H, D) * 1.5).to(dtype), (r(1, T, H, D) * 1.5).to(dtype), r(1, T, H, D).to(dtype)
    if w_law == "random":
        w = F.normalize(r(1, T, H, D), dim=-1)
    else:  # nearly parallel rows: an ill-conditioned I + A in every chunk
        w = F.normalize(0.9 * r(1, 1, H, D) + 0.1 * r(1, T, H, D), dim=-1)
    gates = F.logsigmoid(r(1, T, H) * 2 + 2) if variant == "path_fox" else None
    x = dict(q=q, k=k, v=v, w=w, beta=torch.full((1, T, H), beta), g=gates)
    return {name: None if t is None else t.to(device) for name, t in x.items()}


def case(x: dict, D: int, rows: int, dtype_name: str, with_fla: bool) -> dict:
    """Ours, fla's and the output's own rounding against the float64 definition's last `rows` rows."""
    from path_eval.kernels.path_attn.fwd import path_attention
    from path_eval.kernels.path_attn.naive import naive_attention
    from path_eval.numerics import relative_error

    scale, gated = D ** -0.5, x["g"] is not None
    gate_scale = scale if gated else 1.0
    T = x["q"].shape[1]
    began = time.perf_counter()
    ref = naive_attention(x["q"], x["k"], x["v"], scale=scale, w=x["w"], beta=x["beta"], g=x["g"],
                          gate_scale=gate_scale, last_rows=rows)
    reference_s = time.perf_counter() - began
    row = {}
    for name, accurate in (("ours", False), ("ours_accurate", True)):
        ours = path_attention(x["q"], x["k"], x["v"], scale=scale, w=x["w"], beta=x["beta"], g=x["g"],
                              gate_scale=gate_scale, accurate_preparation=accurate)[0]
        row[name] = relative_error(ours[:, T - rows:], ref)
        row[f"{name}_within_bound"] = row[name] <= BOUND[dtype_name]
    row |= {"output_rounding": relative_error(ref.to(ours.dtype), ref), "reference_s": round(reference_s, 2)}
    if with_fla:
        from fla.ops.path_attn.parallel import parallel_path_attn

        theirs = parallel_path_attn(x["q"], x["k"], x["v"], x["w"], x["beta"], x["g"], scale)[0]
        row["fla"] = relative_error(theirs[:, T - rows:], ref)
    return row


def fla_available(args) -> bool:
    if args.no_fla:
        return False
    from training.autotune import pin_autotuning

    pin_autotuning()  # before fla imports: one configuration per kernel, no autotuning
    try:
        import fla.ops.path_attn.parallel  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    began = time.perf_counter()
    try:
        args = parse_args(argv)
        if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
            raise PathEvalError("--device cuda: no CUDA GPU here; on the CPU give --device cpu (Triton's interpreter)")
        if torch.device(args.device).type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            raise PathEvalError("--device cpu runs the kernels under Triton's interpreter: set TRITON_INTERPRET=1")
        if torch.device(args.device).type == "cpu" and args.dtype == "bfloat16":
            raise PathEvalError("--dtype bfloat16 on the CPU: Triton's interpreter has no bfloat16; "
                                "give --dtype float16")
        os.environ.setdefault("PATH_EVAL_AUTOTUNE", "0")
        with_fla = fla_available(args)
        import triton

        interpreter = ["TRITON_INTERPRET=1"] if os.environ.get("TRITON_INTERPRET") == "1" else []
        meta = {"command": " ".join([*interpreter, "python", "-m", "benchmarks.beta_near_two", *argv]),
                "machine": machine(args.device) + ("" if torch.device(args.device).type == "cuda"
                                                   else ", Triton's interpreter"),
                "torch": torch.__version__, "triton": triton.__version__, "dtype": args.dtype, "heads": args.heads,
                "rows": args.rows, "bound": BOUND[args.dtype], "fla": with_fla}
        if with_fla:
            import fla
            meta["fla_version"] = fla.__version__
        records = []
        dtype = getattr(torch, args.dtype)
        for D in args.head_dims:
            for T in args.lengths:
                for w_law in args.w:
                    for variant in args.variants:
                        x = None
                        for beta in args.betas:
                            if time.perf_counter() - began > args.budget_s:
                                raise TimeoutError
                            x = case_inputs(T, args.heads, D, w_law, variant, beta, dtype, args.device, seed=T + D)
                            row = case(x, D, min(args.rows, T), args.dtype, with_fla)
                            records.append({"D": D, "T": T, "w": w_law, "variant": variant, "beta": beta} | row)
                            print(records[-1], flush=True)
                            write_json_atomic({"meta": meta, "records": records}, args.out)
    except TimeoutError:
        print(f"budget of {args.budget_s} s spent: {len(records)} cases written", file=sys.stderr)
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def render_beta_near_two(results: Path) -> str:
    """Each results/bench/beta_near_two_*.json: the errors per case, one row per (D, T, w, variant)."""
    parts = []
    for path in sorted((results / "bench").glob("beta_near_two_*.json")):
        data = load(path)
        meta, records = data["meta"], data["records"]
        betas = sorted({r["beta"] for r in records})
        parts.append(f"Source: {source(path, results)}. Machine: {meta['machine']}; torch {meta['torch']}, triton "
                     f"{meta['triton']}{', fla ' + meta['fla_version'] if meta.get('fla') else ''}. {meta['dtype']} "
                     f"q, k, v; {meta['heads']} heads; errors over the last {meta['rows']} rows; the bound: "
                     f"{sci(meta['bound'])}.")
        groups = {}
        for r in records:
            groups.setdefault((r["D"], r["T"], r["w"], r["variant"]), {})[r["beta"]] = r
        header = ["D", "T", "w", "variant", "output rounding"]
        columns = [("ours", "ours"), ("ours_accurate", "ours, accurate prep")]
        columns += [("fla", "fla")] if meta.get("fla") else []
        header += [f"{label}, beta {b:g}" for _, label in columns for b in betas]
        rows = []
        for (D, T, w, variant), by_beta in groups.items():
            def cell(b, key):
                if b not in by_beta or key not in by_beta[b]:
                    return "-"
                over = by_beta[b].get(f"{key}_within_bound") is False
                return sci(by_beta[b][key]) + (" (over)" if over else "")
            rows.append([str(D), str(T), w, variant, sci(max(r["output_rounding"] for r in by_beta.values()))]
                        + [cell(b, key) for key, _ in columns for b in betas])
        parts.append(table(header, rows))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
