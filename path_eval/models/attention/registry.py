"""The one registry of attention backends: a name (what `attention=` and `--attention` take) to the
function that computes attention. Each backend module registers itself when imported; the built-in
ones are imported on first use, so that a name is checked (`check_backend_name`) without torch:
importing it takes seconds idle and minutes on a loaded machine, and a typo should cost neither."""
from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Callable

from path_eval.errors import PathEvalError

if TYPE_CHECKING:
    import torch

    from path_eval.models.attention.inputs import AttentionInputs, KVState

Backend = Callable[["AttentionInputs", "KVState | None", bool], "tuple[torch.Tensor, KVState | None]"]

# The module that registers each built-in backend under its name.
BUILT_IN = {"reference": "path_eval.models.attention.reference",
            "torch": "path_eval.models.attention.torch_backend",
            "triton": "path_eval.models.attention.kernel_backend"}

BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, backend: Backend) -> None:
    """Make `backend` selectable as `name`. A name is registered once: a second backend under it
    would silently change what a model computes."""
    if name in BACKENDS:
        raise ValueError(f"attention backend {name!r} is already registered")
    BACKENDS[name] = backend


def backend_names() -> list[str]:
    """Every selectable name: the built-in backends and those registered since."""
    return sorted({*BUILT_IN, *BACKENDS})


def check_backend_name(name: str | None) -> None:
    """None (the model's default) or a selectable name, or one error line."""
    if name is not None and name not in BUILT_IN and name not in BACKENDS:
        raise PathEvalError(f"unknown attention backend {name!r}: choose one of {', '.join(backend_names())}")


def get_backend(name: str) -> Backend:
    check_backend_name(name)
    if name not in BACKENDS:
        importlib.import_module(BUILT_IN[name])
    return BACKENDS[name]


def default_backend(device: torch.device | str, dtype: torch.dtype, head_dim: int) -> str:
    """The fastest backend that runs a model of this dtype and head dim on `device`: the Triton
    kernels on CUDA when they take both, else the torch backend (float64 models, head dims that are
    not a power of two from 16 to 128, no triton, no GPU)."""
    from path_eval.kernels.path_attn import supported

    if (str(device).split(":")[0] == "cuda" and dtype in supported.DTYPES and head_dim in supported.HEAD_DIMS
            and importlib.util.find_spec("triton") is not None):
        return "triton"
    return "torch"
