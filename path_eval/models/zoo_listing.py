"""The models `list` shows: the trained zoo's checkpoints by their `zoo:NAME`, then the checkpoint
folders found in folders the user names, each as its model type and attention variant (read from
its config.json, so nothing heavy is imported to list them)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.models.config_file import read_config
from path_eval.models.zoo import ZOO_PREFIX, zoo_models


def model_line(name: str, config: Path) -> str:
    """`model NAME: MODEL_TYPE VARIANT` for the checkpoint whose config.json is `config`."""
    raw = read_config(config)
    variant = raw.get("attention") or ("path_fox" if raw.get("use_forget_gate") else "")
    return f"model {name}: {raw.get('model_type', '?')} {variant}".rstrip()


def listed_models(folders: list[str]) -> Iterator[str]:
    """One line per zoo model, then per checkpoint folder inside each of `folders`. The zoo comes
    first and one line at a time, so it is listed even when a folder the user names is missing."""
    for path in zoo_models():
        yield model_line(f"{ZOO_PREFIX}{path.name}", path / "config.json")
    for folder in folders:
        if not Path(folder).is_dir():
            raise PathEvalError(f"--models {folder}: no such folder: give folders that hold checkpoint folders")
        for config in sorted(Path(folder).glob("*/config.json")):
            yield model_line(str(config.parent), config)
