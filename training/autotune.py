"""One launch configuration per autotuned Triton kernel in a training process.

fla's PaTH layer calls helper kernels (the short convolution, the L2 norm, the chunked cumulative
sum, the triangular solve, the scaled K K^T) that Triton autotunes over 16-48 configurations each,
for every new key (batch and heads are in some keys): on the H200 a PaTH model's first forward and
backward spent over two minutes compiling and timing them, in every training process. The small
diagnostic models are launch-bound, so the tuned choice buys nothing there. `pin_autotuning()` keeps
each autotuner's single configuration nearest a middle one (4 warps, 2 stages, blocks of 64);
Triton then compiles that one and times nothing. The configuration changes how a kernel is launched,
not what it computes, except where fla tunes over a precision (the triangular solve's `ieee` or
`tf32` dot): the first one listed stays, fla's `ieee` by default, so the pinned run is no less
exact than a tuned one and does not depend on timings.

It must run before fla is imported: the autotuners are built when fla's modules are."""
from __future__ import annotations

import math
import sys

from path_eval.errors import PathEvalError

MIDDLE_WARPS, MIDDLE_STAGES, MIDDLE_BLOCK = 4, 2, 64


def config_distance(config) -> tuple[float, float, float]:
    """How far a triton.Config is from the middle one: warps, then stages, then its integer block
    sizes (log2 distances); non-integer choices (a dot precision) do not count, so the first listed wins."""
    blocks = sum(abs(math.log2(value / MIDDLE_BLOCK)) for value in config.kwargs.values()
                 if isinstance(value, int) and not isinstance(value, bool) and value > 0)
    return abs(math.log2(config.num_warps / MIDDLE_WARPS)), abs(config.num_stages - MIDDLE_STAGES), blocks


def pinned_config(configs: list):
    """The configuration a pinned autotuner keeps: the nearest the middle, the first listed on ties."""
    return min(configs, key=config_distance)


def pin_autotuning() -> None:
    """Make every Triton autotuner built from now on keep `pinned_config` of its list alone (once per
    process: a worker that trains several models calls it before each)."""
    from triton.runtime.autotuner import Autotuner

    if getattr(Autotuner.__init__, "pinned", False):
        return
    if "fla" in sys.modules:
        raise PathEvalError("pin_autotuning() ran after fla was imported: its autotuners already hold every "
                            "configuration; call it before the first import of fla")
    build = Autotuner.__init__

    def build_pinned(self, *args, **kwargs):
        build(self, *args, **kwargs)
        if len(self.configs) > 1:
            self.configs = [pinned_config(self.configs)]

    build_pinned.pinned = True
    Autotuner.__init__ = build_pinned
