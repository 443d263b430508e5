"""Every launch configuration of the forward kernel (`fwd.CONFIGS`, none pruned) timed by Triton's
autotuner, per kernel variant a 760M-shaped model's prefill meets (D = 64, 24 heads, batch 8: a
first 8K chunk with padding masked, a second one on a cache, a short last chunk on a cache) and the
PaTH-FoX coarse walk; the data behind `fwd._prune`. Each case runs in an empty Triton cache folder,
so its first call's seconds count compiling and timing every configuration (kernels an earlier case
of the process compiled, such as the preparation's, stay compiled in memory).

    python -m benchmarks.forward_autotune --out results/bench/forward_autotune.json
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

from benchmarks.kernels import inputs, tokens
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kernel_source, load, table

CASES = {  # name: (B, T, heads, D, gate, cached tokens, padding mask)
    "path D=64 8K chunk with a padding mask": (8, 8192, 24, 64, False, 0, True),
    "path D=64 8K chunk on an 8K cache with a padding mask": (8, 8192, 24, 64, False, 8192, True),
    "path D=64 1K last chunk on an 8K cache with a padding mask": (8, 1024, 24, 64, False, 8192, True),
    "path_fox D=64 8K without a mask": (8, 8192, 32, 64, True, 0, False),
}


def config_timings(tuner) -> dict[str, float]:
    """ms of each configuration a Triton autotuner timed in its latest tuning."""
    return {str(config): round(float(ms[0] if isinstance(ms, (list, tuple)) else ms), 4)
            for config, ms in tuner.configs_timings.items()}


def timed_case(fwd, B: int, T: int, H: int, D: int, gate: bool, cached: int, mask: bool) -> dict:
    """One path_attention call through an unpruned autotuner: its configurations' timings (ms)."""
    x = inputs(B, T + cached, H, D, True, gate)
    extra = {"key_valid": torch.ones(B, T, dtype=torch.bool, device="cuda")} if mask else {}
    if cached:
        cache, x = tokens(x, 0, cached), tokens(x, cached, cached + T)
        extra |= dict(cache_k=cache["k"], cache_v=cache["v"], cache_valid=torch.ones(B, cached, dtype=torch.bool, device="cuda"))
        if gate:
            extra["cache_g"] = cache["g"].cumsum(1)
    began = time.perf_counter()
    fwd.path_attention(**x, **extra)
    torch.cuda.synchronize()
    first = time.perf_counter() - began
    timings = config_timings(fwd._path_attn_fwd)
    return {"first_call_s": round(first, 2), "ms_by_config": timings, "fastest": min(timings, key=timings.get)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/forward_autotune.json"))
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated names from CASES")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.cases.split(",") if name.strip()]
    unknown = [name for name in names if name not in CASES]
    if unknown or not names:
        raise SystemExit(f"--cases {args.cases!r}: choose from {', '.join(CASES)}")
    from path_eval.kernels.path_attn import fwd

    if not torch.cuda.is_available():
        raise SystemExit("forward_autotune times the compiled kernels: run it on a CUDA GPU")
    if not fwd.TUNED:
        raise SystemExit("the forward is not autotuned here (interpreter or PATH_EVAL_AUTOTUNE=0): run on a GPU")
    fwd._path_attn_fwd = triton.autotune(configs=fwd.CONFIGS, key=fwd.TUNING_KEY)(fwd._path_attn_fwd.fn)
    meta = {"machine": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "command": " ".join(["python -m benchmarks.forward_autotune", *(sys.argv[1:] if argv is None else argv)])}
    records = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="triton-tune-") as cache:
            os.environ["TRITON_CACHE_DIR"] = cache
            fwd._path_attn_fwd.cache.clear()
            record = {"case": name, **timed_case(fwd, *CASES[name])}
        records.append(record)
        print(name, record, flush=True)
        write_json_atomic({**meta, "records": records}, args.out)
    return 0


# ---------------------------------------------------------------- docs/benchmarks.md

def config_name(config: str) -> str:
    """A Triton config as printed, without its always-default CTA count."""
    return config.replace("num_ctas: 1, ", "")


def tuning_table(tunings: list[dict], heading) -> str:
    """ms of each launch configuration (rows) in each autotuner run (columns, `heading(run)`)."""
    configs = sorted({c for t in tunings for c in t["ms_by_config"]})
    rows = [[config_name(c)] + [f"{t['ms_by_config'][c]:.2f}" if c in t["ms_by_config"] else "-" for t in tunings]
            for c in configs]
    return table(["configuration", *(heading(t) for t in tunings)], rows)


def autotune_table(records: list[dict]) -> str:
    """ms of each forward configuration (rows) per kernel variant (columns), and x the variant's fastest."""
    def mean_ratio(config: str) -> tuple[float, str]:  # fastest on average first; ties by name
        ratios = [r["ms_by_config"][config] / min(r["ms_by_config"].values()) for r in records if config in r["ms_by_config"]]
        return sum(ratios) / len(ratios), config

    configs = sorted({config for r in records for config in r["ms_by_config"]}, key=mean_ratio)
    rows = [[config_name(config)]
            + [f"{r['ms_by_config'][config]:.2f} ({r['ms_by_config'][config] / min(r['ms_by_config'].values()):.2f}x)"
               if config in r["ms_by_config"] else "-" for r in records] for config in configs]
    rows.append(["first call s (compiling and timing all)"] + [f"{r['first_call_s']:.1f}" for r in records])
    return table(["configuration", *(r["case"] for r in records)], rows)


def render_forward_autotune(results: Path) -> str:
    path = results / "bench" / "forward_autotune.json"
    data = load(path)
    return "\n\n".join([kernel_source(path, results, data), autotune_table(data["records"])])


if __name__ == "__main__":
    raise SystemExit(main())
