"""Where the preparation's transition kernel (`prep._chunk_transition`) spends its time, and whether
a rewrite of one part is faster: the kernel timed whole, with one part removed at a time, and with
candidate rewrites, on the GPU (`prep.chunk_transitions`: that kernel alone, without the query kernel).

    python -m benchmarks.transition_ablation --out results/bench/trials/transition_ablation.json

Each variant is `prep.py`'s own source with one textual edit, written to a temporary module and
imported, so the kernel measured is always the committed one with that edit; an edit whose text is no
longer in `prep.py` stops the bench. A removal (a loop given no iterations, a precision lowered) leaves
the rest computing on whatever its buffers hold: a timing only, never a result. A candidate computes
what the shipped kernel computes (tests/benchmarks/test_transition_ablation.py holds it to the shipped
kernel's outputs under the interpreter), so a faster candidate can replace its part of `prep.py`.
bf16 k, float32 w as the bench's inputs (`benchmarks.kernels.inputs`), B x T = 64K tokens at
T = 8192, 32 heads of 64 / 16 of 128; triton.testing.do_bench medians.
"""
from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from benchmarks.kernels import inputs, log
from path_eval.atomic_files import write_atomic, write_json_atomic
from benchmarks.markdown import kernel_source, load, table

@dataclass(frozen=True)
class Span:
    """The text of prep.py from the line `first` through the line `last` (each there once), for an
    edit that replaces a whole passage without a copy of it here."""

    first: str
    last: str


def edit_text(text: str | Span, source: str, name: str) -> str:
    """What an edit replaces in `source`: its text, or the passage its `Span` marks; the bench stops
    when that is not in prep.py exactly once."""
    if isinstance(text, Span):
        i = source.find(text.first)
        j = source.find(text.last, i + 1) if source.count(text.first) == source.count(text.last) == 1 else -1
        if j < 0:
            raise SystemExit(f"variant {name!r}: its passage is no longer in prep.py once "
                             f"({text.first.strip()!r} ... {text.last.strip()!r}); update EDITS")
        return source[i:j + len(text.last)]
    if source.count(text) != 1:
        raise SystemExit(f"variant {name!r}: its text is no longer in prep.py once ({text.strip()!r}); update EDITS")
    return text


TREE_LEVELS = "    for level in tl.static_range(1, 4):\n"
TREE = (
    "    X_diag = tl.where(in_row == in_col, 1.0, 0.0) - tl.where(in_row // 2 == in_col // 2, a_diag, 0.0)\n"
    + TREE_LEVELS
    + "        M = tl.where((in_row >> (level + 1) == in_col >> (level + 1)) & (in_row >> level != in_col >> level), a_diag, 0.0)\n"
    "        X_diag = X_diag - tl.dot(tl.dot(X_diag, M, input_precision=SOLVE_PREC), X_diag, input_precision=SOLVE_PREC)\n")
BLOCK_ROWS = ("    if NB > 1:\n", "    if NB > 2:\n")
# (I + A)^-1 = (I - A)(I + A^2)(I + A^4)(I + A^8) for a strictly lower 16 x 16 block (A^16 = 0): six
# batched products like the tree's but only four deep; powers of A, whose entries grow without bound
# where I + A is ill-conditioned.
DIAGONAL_BY_DOUBLING = ((TREE, """\
    P = a_diag
    X_diag = tl.where(in_row == in_col, 1.0, 0.0) - P
    for s in tl.static_range(3):
        P = tl.dot(P, P, input_precision=SOLVE_PREC)
        X_diag = tl.dot(X_diag, P, X_diag, input_precision=SOLVE_PREC)
"""),)

# The 16-step forward substitution the tree replaced (all blocks at once, a row of each per step, each
# step loading its rows of A), to time the two side by side.
DIAGONAL_BY_SUBSTITUTION = ((TREE, """\
    X_diag = tl.zeros([NB, SUB, SUB], tl.float32)
    for i in range(SUB):
        a_i = tl.load(a_tile + (nb * SUB + i)[:, None] * C + (nb * SUB)[:, None] + r[None, :])
        x_i = tl.where((r == i)[None, :], 1.0, 0.0) - tl.sum(a_i[:, :, None] * X_diag, axis=1)
        X_diag = tl.where((r == i)[None, :, None], x_i[:, None, :], X_diag)
"""),)

BLOCK_ROW_STEPS = Span("    x0 = tl.load(x_tile + r[:, None] * C + ci[None, :])\n",
                       "        tl.store(x_tile + (3 * SUB + r)[:, None] * C + ci[None, :], x3)\n")
# The blocks below the diagonal by the same recursive block inverse as the diagonal blocks, two more
# levels: both 32-row pairs of 16-row blocks at once (batched products), then the 32-row block below
# from the two 32-row inverses (X21 = -X22 A21 X11): four products deep instead of six.
BLOCK_ROWS_BY_TREE = ((BLOCK_ROW_STEPS, """\
    if NB > 1:
        NP: tl.constexpr = C // (2 * SUB)
        pb = tl.arange(0, NP)
        hr = tl.arange(0, 2 * SUB)
        pair = (pb[:, None, None] * (2 * SUB) + hr[None, :, None]) * C + pb[:, None, None] * (2 * SUB) + hr[None, None, :]
        Xp = tl.load(x_tile + pair)
        Mp = tl.where((hr[None, :, None] >= SUB) & (hr[None, None, :] < SUB), tl.load(a_tile + pair), 0.0)
        Xp = Xp - tl.dot(tl.dot(Xp, Mp, input_precision=SOLVE_PREC), Xp, input_precision=SOLVE_PREC)
        if NB > 2:
            X11, X22 = tl.split(tl.permute(Xp, [1, 2, 0]))
            A21 = tl.load(a_tile + (2 * SUB + hr)[:, None] * C + hr[None, :])
            X21 = -tl.dot(tl.dot(X22, A21, input_precision=SOLVE_PREC), X11, input_precision=SOLVE_PREC)
            tl.store(x_tile + (2 * SUB + hr)[:, None] * C + hr[None, :], X21)
        tl.debug_barrier()  # every load of the pairs done before they are overwritten
        tl.store(x_tile + pair, Xp)
"""),)

KINDS = ("whole", "removal", "candidate", "unstable")
# (variant, kind, what it removes or changes, its (text of prep.py, replacement) pairs). kind: "whole" the
# shipped kernel, "removal" a part taken out (timing only), "candidate" a rewrite that computes what the
# shipped kernel does, "unstable" a rewrite that does so on well-conditioned inputs only (kept to show
# what it would save; tests/benchmarks/test_transition_ablation.py holds each kind to its claim). Rewrites
# timed against earlier forms of the kernel, and what became of them: kernels/README.md, "Preparation".
EDITS = [
    ("whole", "whole", "nothing", ()),
    ("no diagonal inverse", "removal", "the three upper levels of the 16 x 16 diagonal blocks' tree inverse",
     ((TREE_LEVELS, "    for level in tl.static_range(1, 1):\n"),)),
    ("no block rows", "removal", "the block forward substitution of the blocks below the diagonal",
     tuple((text, "    if NB > 4:\n") for text in BLOCK_ROWS)),
    ("no solve", "removal", "both parts of the UT solve",
     ((TREE_LEVELS, "    for level in tl.static_range(1, 1):\n"),) + tuple((text, "    if NB > 4:\n") for text in BLOCK_ROWS)),
    ("solve in one tf32 pass", "removal", "tf32x3 of the solve's products (one tf32 pass instead)",
     (('SOLVE_PREC="tf32x3"', 'SOLVE_PREC="tf32"'),)),
    ("no T W and keys", "removal", "T W and the keys at their chunk end (their products and stores)",
     (("    tw_tile = TW_OUT + scratch * (C * D)\n    for c in tl.static_range(D // DB):\n",
       "    tw_tile = TW_OUT + scratch * (C * D)\n    for c in tl.static_range(0):\n"),)),
    ("no U", "removal", "the transition U = W^T (T W) (its products and stores)",
     (("    for rb in tl.static_range(D // DB):\n", "    for rb in tl.static_range(0):\n"),)),
    ("diagonal blocks by substitution", "candidate",
     "the 16 x 16 diagonal blocks by the 16-step forward substitution the tree replaced", DIAGONAL_BY_SUBSTITUTION),
    ("block rows by a tree", "candidate",
     "the blocks below the diagonal by two more levels of the recursive block inverse, four products deep instead of six",
     BLOCK_ROWS_BY_TREE),
    ("diagonal blocks by doubling", "unstable",
     "the diagonal blocks inverted as (I - A)(I + A^2)(I + A^4)(I + A^8), batched products four deep instead of six",
     DIAGONAL_BY_DOUBLING),
]


def variant_source(name: str, pairs) -> str:
    """prep.py's source with each (text, replacement) of `pairs` applied."""
    from path_eval.kernels.path_attn import prep
    source = Path(prep.__file__).read_text()
    for text, replacement in pairs:
        source = source.replace(edit_text(text, source, name), replacement)
    return source


def apply_candidate(name: str) -> None:
    """prep.py rewritten in place with the named candidate's edits."""
    from path_eval.kernels.path_attn import prep
    found = [pairs for n, kind, _, pairs in EDITS if n == name and kind == "candidate"]
    if not found:
        names = ", ".join(repr(n) for n, kind, _, _ in EDITS if kind == "candidate")
        raise SystemExit(f"no candidate named {name!r}: choose one of {names}")
    write_atomic(variant_source(name, found[0]), Path(prep.__file__))
    print(f"prep.py now holds candidate {name!r}")


def variant_module(name: str, pairs, folder: Path):
    """prep.py with each (text, replacement) of `pairs` applied, imported as its own module."""
    source = variant_source(name, pairs)
    path = folder / f"prep_{len(list(folder.iterdir()))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def measure(head_dims, T: int, warmup: int, rep: int, kinds) -> list[dict]:
    from triton.testing import do_bench
    from path_eval.kernels.path_attn import prep
    records = []
    edits = [e for e in EDITS if e[1] in kinds]
    with tempfile.TemporaryDirectory() as tmp:
        modules = {name: variant_module(name, pairs, Path(tmp)) if pairs else prep for name, _, _, pairs in edits}
        for D in head_dims:
            H, B = (32 if D == 64 else 16), 65536 // T
            x = inputs(B, T, H, D, True, False)
            for name, kind, what, _ in edits:
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
    p.add_argument("--kinds", default=",".join(KINDS),
                   help="which variants to time, by kind (comma-separated; the whole kernel is always timed)")
    p.add_argument("--apply", metavar="CANDIDATE",
                   help="instead of timing, write the named candidate's edits into prep.py (to test it in place)")
    args = p.parse_args(argv)
    if args.apply:
        apply_candidate(args.apply)
        return
    kinds = set(args.kinds.split(",")) | {"whole"}
    if not kinds <= set(KINDS):
        p.error(f"--kinds takes {', '.join(KINDS)}, not {args.kinds!r}")
    try:
        head_dims = [int(d) for d in args.head_dims.split(",")]
    except ValueError:
        p.error(f"--head-dims takes comma-separated integers, not {args.head_dims!r}")
    if not torch.cuda.is_available():
        raise SystemExit("the ablation times GPU kernels: run it on a machine with a CUDA GPU")
    import triton
    out = {"machine": torch.cuda.get_device_name(), "host": platform.node(), "torch": torch.__version__,
           "triton": triton.__version__,
           "command": "python -m benchmarks.transition_ablation " + " ".join(argv or sys.argv[1:]),
           "records": measure(head_dims, args.length, args.warmup, args.rep, kinds)}
    write_json_atomic(out, Path(args.out))
    whole = {r["D"]: r["ms"] for r in out["records"] if r["variant"] == "whole"}
    for r in out["records"]:
        print(f"D={r['D']:4d} {r['variant']:28s} {r['ms']:7.3f} ms  {r['ms'] / whole[r['D']]:.2f}x whole")


# ---------------------------------------------------------------- docs/benchmarks.md

def ablation_table(records: list[dict]) -> str:
    """ms of the transition kernel whole, with one part removed and with candidate rewrites, per head
    dim, and the time saved against the whole kernel."""
    whole = {r["D"]: r["ms"] for r in records if r["variant"] == "whole"}
    rows = [[str(r["D"]), r["variant"], r["kind"], r["what"], f"{r['ms']:.2f}", f"{whole[r['D']] - r['ms']:.2f}",
             f"{(whole[r['D']] - r['ms']) / whole[r['D']]:.0%}"] for r in records]
    return table(["D", "variant", "kind", "what", "ms", "saved ms", "share"], rows)


def render_transition_ablation(results: Path) -> str:
    parts = []
    for path in sorted((results / "bench").glob("transition_ablation*.json")):
        data = load(path)
        parts += [kernel_source(path, results, data), ablation_table(data["records"])]
    return "\n\n".join(parts)


if __name__ == "__main__":
    main()
