"""Where path-eval keeps what it makes once (tokenizer folders, hashes, demo models, data):
$PATH_EVAL_CACHE or ~/.cache/path-eval. Kept free of heavy imports: the CLI needs it at start-up."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("PATH_EVAL_CACHE", Path.home() / ".cache" / "path-eval"))
