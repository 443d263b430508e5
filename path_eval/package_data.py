"""The data that ships inside the package, read through importlib.resources: the same call finds it
in a source checkout, an editable install and an installed wheel, where paths built from
`__file__` do not (pyproject.toml's `package-dir` and `package-data` say what the wheel holds)."""
from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def builtin_suites() -> Traversable:
    """The suite definitions, `<name>.yaml` (the repository's `suites/` folder)."""
    return files("path_eval.builtin_suites")


def paper_tables() -> Traversable:
    """The paper's published tables, `<name>.json` (the repository's `results/paper/` folder)."""
    return files("path_eval.paper_tables")


def mistral_v1_tokenizer() -> Traversable:
    """The folder of the paper's Mistral v1 SentencePiece model: `tokenizer.model`, its LICENSE and
    a README saying where it comes from."""
    return files("path_eval.models") / "tokenizers" / "mistral-v1"
