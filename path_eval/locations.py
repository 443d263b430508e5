"""Where path-eval keeps what it makes once (tokenizer folders, hashes, demo models, data):
$PATH_EVAL_CACHE or ~/.cache/path-eval. Kept free of heavy imports: the CLI needs it at start-up."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("PATH_EVAL_CACHE", Path.home() / ".cache" / "path-eval"))


def stay_offline() -> None:
    """Runs go without a network: the hub and datasets in offline mode (read by both when first
    imported, so this comes before either is) and datasets' cache inside path-eval's own, never
    ~/.cache/huggingface/datasets."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ.setdefault("HF_DATASETS_CACHE", str(cache_dir() / "hf-datasets"))
