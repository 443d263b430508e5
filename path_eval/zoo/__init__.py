"""The trained small-model zoo: its training data (`corpus`), its tokenizer (`tokenizer`), the
training script (`train`) and the checkpoints under `models/`, which ship in the package and are
named on the command line as `zoo:NAME` (`zoo`: all of them). The flip-flop language the zoo's
flip-flop models learn is a task of the harness: `path_eval.tasks.flipflop`."""
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

