"""Attention backends, selectable by name. Each computes the same function (see `inputs`).

`reference` is the definition materialised (tests); `torch` is the chunked algorithm, the CPU
default; `triton` runs the kernels of `path_eval.kernels` (the CUDA default; on the CPU only under
TRITON_INTERPRET=1). Each registers itself with `register_backend` (`registry`), as other backends
can. The names load on first use: the registry is read before torch imports (`check_backend_name`).
"""
from __future__ import annotations

import importlib

# Each public name and the module of this package that defines it.
LAZY_NAMES = {"AttentionInputs": "inputs", "KVState": "inputs", "Backend": "registry", "BACKENDS": "registry",
              "register_backend": "registry", "backend_names": "registry", "check_backend_name": "registry",
              "default_backend": "registry", "get_backend": "registry"}

__all__ = list(LAZY_NAMES)


def __getattr__(name):
    if name in LAZY_NAMES:
        return getattr(importlib.import_module(f"path_eval.models.attention.{LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module 'path_eval.models.attention' has no attribute {name!r}")
