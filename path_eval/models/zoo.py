"""The trained zoo's checkpoints, named on the command line as `zoo:NAME` (`zoo`: all of them).
They ship as data in the package folder `path_eval.zoo` (read through importlib.resources, so a
checkout and a wheel alike find them); finding them is the model layer's, beside loading them."""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from path_eval.errors import PathEvalError

ZOO_PREFIX = "zoo:"


def zoo_folder() -> Path:
    """The zoo's checkpoints (inside the installed package: a checkout and a wheel alike)."""
    return Path(str(files("path_eval.zoo") / "models"))


def zoo_names() -> list[str]:
    return sorted(p.name for p in zoo_folder().iterdir() if (p / "config.json").is_file())


def zoo_models(name: str | None = None) -> list[Path]:
    """The checkpoint folder of zoo model `name`, or of every zoo model (None)."""
    if name is None:
        return [zoo_folder() / n for n in zoo_names()]
    if name not in zoo_names():
        raise PathEvalError(f"no zoo model {name!r}: choose one of {', '.join(zoo_names())} (zoo:NAME), "
                            "or zoo for all of them")
    return [zoo_folder() / name]
