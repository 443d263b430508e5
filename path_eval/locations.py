"""Where path-eval keeps what it makes once (tokenizer folders, hashes, demo models, data):
$PATH_EVAL_CACHE or ~/.cache/path-eval. Kept free of heavy imports: the CLI needs it at start-up."""
from __future__ import annotations

import os
from pathlib import Path

from path_eval.errors import PathEvalError


# path-eval's own progress bars: "1" shown, "0" not; unset, they follow tqdm's TQDM_DISABLE
# (`path_eval.lm.progress`). The command line sets it: a run shows them and hides lm-eval's bars
# unless --verbose; --quiet hides both.
PROGRESS_VARIABLE = "PATH_EVAL_PROGRESS"


def cache_dir() -> Path:
    """$PATH_EVAL_CACHE, else ~/.cache/path-eval, or one error line: a relative or empty path (an
    empty PATH_EVAL_CACHE, an empty HOME) would put the cache in whatever folder the command runs in,
    or at /.cache."""
    given = os.environ.get("PATH_EVAL_CACHE")
    if given is not None:
        if not Path(given).is_absolute():
            raise PathEvalError(f"PATH_EVAL_CACHE={given!r} is not an absolute folder: give one (e.g. "
                                f"PATH_EVAL_CACHE=$HOME/.cache/path-eval), or unset it for ~/.cache/path-eval")
        return Path(given)
    home = os.environ.get("HOME")
    if home is not None and not Path(home).is_absolute():
        raise PathEvalError(f"HOME={home!r} is not an absolute folder, and the cache would be made under it: give "
                            "PATH_EVAL_CACHE an absolute folder, or HOME yours")
    try:
        return Path.home() / ".cache" / "path-eval"
    except RuntimeError:  # no HOME and no user entry for this process's uid (a bare container)
        raise PathEvalError("this user has no home folder for the cache: give PATH_EVAL_CACHE an absolute, "
                            "writable folder") from None


def stay_offline() -> None:
    """Runs go without a network: the hub and datasets in offline mode (read by both when first
    imported, so this comes before either is) and datasets' cache inside path-eval's own, never
    ~/.cache/huggingface/datasets."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ.setdefault("HF_DATASETS_CACHE", str(cache_dir() / "hf-datasets"))
