"""path-eval: a long-context evaluation harness for PaTH-attention language models."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from pathlib import Path

__version__ = "0.1.0"


class _KernelsFolderFinder(importlib.abc.MetaPathFinder):
    """In a source checkout the Triton kernels live in the top-level `kernels/` folder; expose them
    as `path_eval.kernels` (a bare `kernels` module would clash with Hugging Face's package)."""

    folder = Path(__file__).resolve().parent.parent / "kernels"

    def find_spec(self, fullname, path, target=None):
        if fullname != "path_eval.kernels" or not self.folder.is_dir():
            return None
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)  # a namespace package
        spec.submodule_search_locations = [str(self.folder)]
        return spec


if not (Path(__file__).resolve().parent / "kernels").is_dir():  # installed wheels map the folder themselves
    sys.meta_path.append(_KernelsFolderFinder())


def load_model(path, *, device="cpu", dtype=None, attention=None):
    """Load a checkpoint (fla / flame, transformers causal LM, or our own) -> (model, tokenizer)."""
    from path_eval.models.loading import load_model as _load
    return _load(path, device=device, dtype=dtype, attention=attention)


__all__ = ["load_model", "__version__"]
