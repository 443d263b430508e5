"""path-eval: a long-context evaluation harness for PaTH-attention language models."""
from __future__ import annotations

from path_eval import source_folders
from path_eval.version import __version__


source_folders.install()


def load_model(path, *, device="cpu", dtype=None, attention=None):
    """Load a checkpoint (fla / flame, transformers causal LM, or our own) -> (model, tokenizer)."""
    from path_eval.models.loading import load_model as _load
    return _load(path, device=device, dtype=dtype, attention=attention)


# The Python API (path_eval/api.py, docs/python-api.md), imported on first use so that
# `import path_eval` stays cheap.
API = ("evaluate", "load_results", "Results")


def __getattr__(name):
    if name in API:
        from path_eval import api

        return getattr(api, name)
    raise AttributeError(f"module 'path_eval' has no attribute {name!r}")


__all__ = ["load_model", "__version__", *API]
