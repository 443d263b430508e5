"""The model family (rope, nope, fox, path, path_fox), its cache, loading and generation, and what
is known of a checkpoint around loading it: the zoo's folders (`zoo`), its stated context length
(`context`), its identity (`identity`). The family's names load on first use, so that the plan
stage reads the light modules before torch and transformers' modeling code are imported."""
from __future__ import annotations

import importlib

# Each public name and the module of this package that defines it.
LAZY_NAMES = {"VARIANTS": "config", "PathEvalConfig": "config", "CausalDecoder": "modeling",
              "PathEvalForCausalLM": "pretrained", "DecoderCache": "cache"}

__all__ = list(LAZY_NAMES)


def __getattr__(name):
    if name in LAZY_NAMES:
        return getattr(importlib.import_module(f"path_eval.models.{LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module 'path_eval.models' has no attribute {name!r}")
