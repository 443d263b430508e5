"""Registers, spills and shared memory of our Triton kernels as built for Hopper (sm_90), on a machine
without a GPU, and the programs per SM they allow.

The real wrappers run on small CPU tensors with every Triton launch intercepted; each launch is then
specialized as Triton's launcher would (argument types, alignment) and compiled for sm_90 with the
ptxas that ships with Triton, and the cubin's resources are read back with Triton's cuobjdump.

    python -m benchmarks.kernel_resources [--head-dims 64,128] [--workloads "path forward,..."]

Why: a Hopper SM has 64K registers and 227 KB of shared memory for its programs, and a kernel whose
registers or shared memory allow one program per SM leaves its chain of small products waiting on
latency (kernels/README.md, "Resources"). Numbers depend on the Triton
version: the H200 image has triton 3.6, so for its exact numbers run this where triton 3.6 is
installed (`pip download triton==3.6.0 --no-deps`, then install it into a virtual environment).
Launches are compiled with the configuration the wrapper passes; the forward kernel's is the fixed
one of PATH_EVAL_AUTOTUNE=0 (the GPU autotunes warps and stages).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SM90_REGISTERS = 65536
SM90_SHARED = 227 * 1024    # usable per SM by the programs on it
SM90_MAX_PROGRAMS = 32
SM90_MAX_WARPS = 64


@dataclass
class Resources:
    kernel: str
    config: str
    num_warps: int
    registers: int
    spill_bytes: int
    shared_bytes: int

    @property
    def programs_per_sm(self) -> int:
        """Resident programs per SM: the least of what registers (allocated per thread in steps of 8),
        shared memory, warps and the block limit allow."""
        regs = -(-self.registers // 8) * 8 * 32 * self.num_warps
        by_shared = SM90_SHARED // self.shared_bytes if self.shared_bytes else SM90_MAX_PROGRAMS
        return min(SM90_REGISTERS // regs, by_shared, SM90_MAX_WARPS // self.num_warps, SM90_MAX_PROGRAMS)


def capture_launches(work) -> list[tuple]:
    """(JITFunction, args, kwargs) of every Triton launch `work()` makes; nothing runs."""
    from triton.runtime.jit import JITFunction
    seen = []
    original = JITFunction.run

    def record(self, *args, grid, warmup, **kwargs):
        seen.append((self, args, kwargs))
    JITFunction.run = record
    try:
        work()
    finally:
        JITFunction.run = original
    return seen


def compile_sm90(fn, args, kwargs):
    """The launch compiled for sm_90 as Triton's launcher would specialize it (private Triton API,
    the same in 3.6 and 3.9)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile, make_backend
    from triton.runtime.jit import create_function_from_signature
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    return compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)


def read_resources(compiled, kernel: str, config: str) -> Resources:
    import triton
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        dump = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True, check=True).stdout
    usage = dict(re.findall(r"(REG|STACK):(\d+)", dump))
    return Resources(kernel, config, compiled.metadata.num_warps, int(usage["REG"]), int(usage["STACK"]),
                     compiled.metadata.shared)


def workloads(head_dim: int) -> dict:
    """Small CPU inputs (the bench's, bf16 as the model runs) that make every kernel launch once or more."""
    from benchmarks.kernels import inputs, tokens
    from path_eval.kernels.path_attn.cache import PathKVCache
    from path_eval.kernels.path_attn.fwd import path_attention
    B, T, H, D = 1, 128, 2, head_dim

    def cache_steps():
        cache = PathKVCache(fold_every=2)
        x = inputs(B, T + 2, H, D, True, False, device="cpu")
        cache.attend(**tokens(x, 0, T))
        for t in (T, T + 1):  # two decoding steps, then a fold
            cache.attend(**tokens(x, t, t + 1))
        cache.attend(**tokens(x, 0, 64))  # a segment on the cache

    return {"path forward": lambda: path_attention(**inputs(B, T, H, D, True, False, device="cpu")),
            "path_fox forward": lambda: path_attention(**inputs(B, T, H, D, True, True, device="cpu")),
            "fox forward": lambda: path_attention(**inputs(B, T, H, D, False, True, device="cpu")),
            # five chunks: a coarse walk over one super-chunk of four (`super_chunks`)
            "path coarse forward": lambda: path_attention(**inputs(B, 320, H, D, True, False, device="cpu"),
                                                          super_chunks=4),
            "path_fox coarse forward": lambda: path_attention(**inputs(B, 320, H, D, True, True, device="cpu"),
                                                              super_chunks=4),
            "path cache: prefill, decode, fold, segment": cache_steps}


def resources_of(work, label: str, done: set | None = None) -> list[Resources]:
    """Each distinct launch (kernel, constexprs, options) that `work()` makes, compiled once (`done`
    holds the launches already compiled, across calls)."""
    done = set() if done is None else done
    rows = []
    for fn, args, kwargs in capture_launches(work):
        names = {p.name for p in fn.params}
        consts = {p.name: a for p, a in zip(fn.params, args) if p.is_constexpr}
        consts.update({k: v for k, v in kwargs.items() if k in names})
        options = {k: v for k, v in kwargs.items() if k not in names}
        config = ", ".join(f"{k}={v}" for k, v in sorted(consts.items())) + "".join(f"; {k}={v}" for k, v in sorted(options.items()))
        if (fn.__name__, config) in done:
            continue
        done.add((fn.__name__, config))
        rows.append(read_resources(compile_sm90(fn, args, kwargs), fn.__name__, f"{label}: {config}"))
    return rows


def measure(head_dims, chosen: list[str] | None = None) -> list[Resources]:
    done: set = set()
    rows = []
    for D in head_dims:
        loads = workloads(D)
        unknown = set(chosen or ()) - set(loads)
        if unknown:
            raise SystemExit(f"unknown workload(s) {sorted(unknown)}: choose from {sorted(loads)}")
        for label, work in loads.items():
            if chosen is None or label in chosen:
                rows += resources_of(work, f"D={D} {label}", done)
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--head-dims", default="64,128")
    p.add_argument("--workloads", default=None, help="comma-separated names (default: all)")
    args = p.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        raise SystemExit("kernel_resources compiles real kernels: unset TRITON_INTERPRET")
    os.environ.setdefault("PATH_EVAL_AUTOTUNE", "0")  # before the forward kernel's module is imported
    import triton
    print(f"triton {triton.__version__}, target sm_90")
    print(f"{'kernel':22s} {'warps':>5s} {'regs':>5s} {'spill B':>8s} {'shared KB':>9s} {'per SM':>6s}  config")
    chosen = None if args.workloads is None else args.workloads.split(",")
    for r in measure([int(d) for d in args.head_dims.split(",")], chosen):
        print(f"{r.kernel:22s} {r.num_warps:5d} {r.registers:5d} {r.spill_bytes:8d} {r.shared_bytes / 1024:9.1f} "
              f"{r.programs_per_sm:6d}  {r.config}")


if __name__ == "__main__":
    main()
