"""The `--dtype` names, readable without torch: a mistyped precision is refused before torch
imports (seconds idle, minutes on a loaded machine). `path_eval.models.loading` maps each name to
its torch dtype."""
from __future__ import annotations

from path_eval.errors import PathEvalError

# A weight dtype's names and the torch attribute each stands for.
WEIGHT_DTYPE_NAMES = {"float32": "float32", "fp32": "float32", "float64": "float64", "fp64": "float64",
                      "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}

# Precisions that are not a weight dtype: float32 weights, each forward pass under torch.autocast in the
# named dtype (what the FoX repository's LongBench pred.py runs); recorded in the provenance by this name.
AUTOCAST_NAMES = {"autocast-bf16": "bfloat16"}


def default_dtype_name(device) -> str:
    """The weights' dtype where --dtype is not given: bfloat16 on a GPU, float32 on the CPU."""
    return "bfloat16" if str(device).startswith("cuda") else "float32"


def check_dtype_name(dtype) -> None:
    """None (the device's default), a torch dtype (the Python API) or one of the names above, or one
    error line."""
    if isinstance(dtype, str) and dtype not in WEIGHT_DTYPE_NAMES and dtype not in AUTOCAST_NAMES:
        raise PathEvalError(f"unknown dtype {dtype!r}: choose one of {', '.join([*WEIGHT_DTYPE_NAMES, *AUTOCAST_NAMES])}")
