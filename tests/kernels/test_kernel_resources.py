"""The kernels' resources as built for Hopper (sm_90) on the CPU (`benchmarks.kernel_resources`):
the occupancy arithmetic against Hopper's limits, and the preparation's design bound."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton

from benchmarks.kernel_resources import Resources

TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


@pytest.mark.parametrize("regs,warps,shared_kb,expected", [
    (255, 4, 120, 1),   # a one-kernel preparation's shared memory allows one program
    (255, 4, 0, 2),     # 255 -> 256 registers x 128 threads: two programs fill 64K registers
    (168, 4, 64, 3),    # the transition kernel's cap: 168 x 128 = 21504 registers, three programs
    (128, 4, 16, 4),
    (32, 4, 0, 16),     # warps bound it: 64 warps per SM
    (32, 1, 0, 32),     # the block limit
])
def test_programs_per_sm_follow_hopper_limits(regs, warps, shared_kb, expected):
    assert Resources("k", "", warps, regs, 0, shared_kb * 1024).programs_per_sm == expected


@pytest.mark.skipif(not (TOOLS / "ptxas").exists() or not (TOOLS / "cuobjdump").exists(),
                    reason="this Triton build ships no ptxas / cuobjdump")
@pytest.mark.parametrize("head_dim", [64, 128])
def test_preparation_and_transport_kernels_fit_several_programs_per_sm(head_dim):
    """The design of the two-launch preparation in column blocks (at most 168 registers, so three
    programs share an SM, at D = 64 and D = 128, with the float32 keys of the coarse walk too) and of
    the super-chunk transport (two programs per SM at D = 64; at D = 128 its two pipeline stages take
    128 KB of shared memory with Triton 3.6, one program per SM, and 112 KB with 3.9, two: there one
    program is allowed when the next chunk's loads are prefetched, which on an H200 was faster than
    one stage at more programs, results/bench/launch_configs_transport_h200.json; its shared memory
    may not grow past 128 KB) as compiled for sm_90. A one-kernel preparation, or D = 128 in one
    D-wide tile, allows one program per SM; the one tile spills 1.8 KB under the 168-register cap,
    where the column blocks spill at most about 400 bytes (Triton 3.6 and 3.9)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "benchmarks.kernel_resources", "--head-dims", str(head_dim),
                          "--workloads", "path forward,path coarse forward"], capture_output=True, text=True, env=env,
                         timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("_")]
    transitions = [r for r in rows if r[0] == "_chunk_transition"]
    transports = [r for r in rows if r[0] == "_super_chunk_transport"]
    assert len(transitions) == 2 and len(transports) == 1, rows  # without and with the coarse walk's float32 keys
    for _, _, regs, spill, shared_kb, per_sm, *_ in transitions:
        assert int(regs) <= 168 and int(spill) <= 512 and float(shared_kb) <= 76 and int(per_sm) >= 3, transitions
    for _, _, regs, spill, shared_kb, per_sm, *config in transports:
        stages = int(re.search(r"num_stages=(\d+)", " ".join(config)).group(1))
        prefetched = head_dim == 128 and stages >= 2 and float(shared_kb) <= 128
        assert int(spill) <= 256 and (int(per_sm) >= 2 or prefetched), transports
    assert {"_chunk_queries", "_path_attn_fwd"} <= {r[0] for r in rows}
