"""Where the preparation's transition kernel (`prep._chunk_transition`) spends its time, and whether
a rewrite of one part is faster: the kernel timed whole, with one part removed at a time, and with
candidate rewrites, on the GPU (`prep.chunk_transitions`: that kernel alone, without the query kernel).

    python -m path_eval.bench.transition_ablation --out results/bench/trials/transition_ablation.json

Each variant is `prep.py`'s own source with one textual edit, written to a temporary module and
imported, so the kernel measured is always the committed one with that edit; an edit whose text is no
longer in `prep.py` stops the bench. A removal (a loop given no iterations, a precision lowered) leaves
the rest computing on whatever its buffers hold: a timing only, never a result. A candidate computes
what the shipped kernel computes (tests/bench/test_transition_ablation.py holds it to the shipped
kernel's outputs under the interpreter), so a faster candidate can replace its part of `prep.py`.
bf16 k, float32 w as the bench's inputs (`path_eval.bench.kernels.inputs`), B x T = 64K tokens at
T = 8192, 32 heads of 64 / 16 of 128; triton.testing.do_bench medians.
"""
from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import tempfile
from pathlib import Path

import torch

from path_eval.bench.kernels import inputs, log
from path_eval.results.store import write_json_atomic

DIAGONAL_LOOP = "    for i in range(SUB):\n"
BLOCK_ROWS_LOOP = "    for i in tl.static_range(1, NB):\n"

# (variant, kind, what it removes or changes, its (text of prep.py, replacement) pairs)
EDITS = [
    ("whole", "whole", "nothing", ()),
    ("no diagonal substitution", "removal", "the 16-step forward substitution of the 16 x 16 diagonal blocks",
     ((DIAGONAL_LOOP, "    for i in range(0):\n"),)),
    ("no block rows", "removal", "the block forward substitution of the blocks below the diagonal",
     ((BLOCK_ROWS_LOOP, "    for i in tl.static_range(1, 1):\n"),)),
    ("no solve", "removal", "both parts of the UT solve",
     ((DIAGONAL_LOOP, "    for i in range(0):\n"), (BLOCK_ROWS_LOOP, "    for i in tl.static_range(1, 1):\n"))),
    ("solve in one tf32 pass", "removal", "tf32x3 of the block rows' products (one tf32 pass instead)",
     (('SOLVE_PREC="tf32x3"', 'SOLVE_PREC="tf32"'),)),
    ("no T W and keys", "removal", "T W and the keys at their chunk end (their products and stores)",
     (("    tw_tile = TW_OUT + scratch * (C * D)\n    for c in tl.static_range(D // DB):\n",
       "    tw_tile = TW_OUT + scratch * (C * D)\n    for c in tl.static_range(0):\n"),)),
    ("no U", "removal", "the transition U = W^T (T W) (its products and stores)",
     (("    for rb in tl.static_range(D // DB):\n", "    for rb in tl.static_range(0):\n"),)),
    ("diagonal rows from registers", "candidate",
     "the diagonal blocks loaded once, each substitution step taking its row from registers instead of a load",
     ((DIAGONAL_LOOP
       + "        a_i = tl.load(a_tile + (nb * SUB + i)[:, None] * C + (nb * SUB)[:, None] + r[None, :])  # row i of each block\n",
       "    in_row = r[None, None, :]\n"
       "    a_diag = tl.load(a_tile + (nb[:, None, None] * SUB + in_row) * C + nb[:, None, None] * SUB + r[None, :, None])\n"
       + DIAGONAL_LOOP
       + "        a_i = tl.sum(tl.where(in_row == i, a_diag, 0.0), axis=2)  # row i of each block\n"),)),
]


def variant_module(name: str, pairs, folder: Path):
    """prep.py with each (text, replacement) of `pairs` applied, imported as its own module."""
    from path_eval.kernels.path_attn import prep
    source = Path(prep.__file__).read_text()
    for o, n in pairs:
        if source.count(o) != 1:
            raise SystemExit(f"variant {name!r}: its text is no longer in prep.py once ({o.strip()!r}); update EDITS")
        source = source.replace(o, n)
    path = folder / f"prep_{len(list(folder.iterdir()))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def measure(head_dims, T: int, warmup: int, rep: int) -> list[dict]:
    from triton.testing import do_bench
    from path_eval.kernels.path_attn import prep
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        modules = {name: variant_module(name, pairs, Path(tmp)) if pairs else prep for name, _, _, pairs in EDITS}
        for D in head_dims:
            H, B = (32 if D == 64 else 16), 65536 // T
            x = inputs(B, T, H, D, True, False)
            for name, kind, what, _ in EDITS:
                module = modules[name]
                ms = do_bench(lambda: module.chunk_transitions(x["k"], x["w"], x["beta"], 1, 64, False, False),
                              warmup=warmup, rep=rep)
                records.append(dict(variant=name, kind=kind, what=what, D=D, B=B, H=H, T=T, ms=ms))
                log(records[-1])
            del x
            torch.cuda.empty_cache()
    return records


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results/bench/trials/transition_ablation.json")
    p.add_argument("--head-dims", default="64,128")
    p.add_argument("--length", type=int, default=8192)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rep", type=int, default=50)
    args = p.parse_args(argv)
    try:
        head_dims = [int(d) for d in args.head_dims.split(",")]
    except ValueError:
        p.error(f"--head-dims takes comma-separated integers, not {args.head_dims!r}")
    if not torch.cuda.is_available():
        raise SystemExit("the ablation times GPU kernels: run it on a machine with a CUDA GPU")
    import triton
    out = {"machine": torch.cuda.get_device_name(), "host": platform.node(), "torch": torch.__version__,
           "triton": triton.__version__,
           "command": "python -m path_eval.bench.transition_ablation " + " ".join(argv or sys.argv[1:]),
           "records": measure(head_dims, args.length, args.warmup, args.rep)}
    write_json_atomic(out, Path(args.out))
    whole = {r["D"]: r["ms"] for r in out["records"] if r["variant"] == "whole"}
    for r in out["records"]:
        print(f"D={r['D']:4d} {r['variant']:28s} {r['ms']:7.3f} ms  {r['ms'] / whole[r['D']]:.2f}x whole")


if __name__ == "__main__":
    main()
