"""A source checkout's data folders as packages. pyproject's `package-dir` maps the top-level
`suites/` and `results/paper/` into the wheel as `path_eval.builtin_suites` and
`path_eval.paper_tables`; in a checkout (plain or `pip install -e .`) the finder below gives them the
same names, so importlib.resources reads them alike from either."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from pathlib import Path

# The top-level data folders that pyproject's `package-dir` maps into the package. Neither has an
# `__init__.py`, and setuptools' editable finder resolves only mapped folders that have one
# (pypa/setuptools#4943), so a source checkout, plain or `pip install -e .`, finds them here. A
# wheel holds them inside the package. tests/test_packaging.py checks this table against
# pyproject.toml. (`kernels/` needs no entry: `path_eval/kernels` is a symlink to it, which
# imports, editors and setuptools all follow: kernels/README.md.)
SOURCE_FOLDERS = {"path_eval.builtin_suites": "suites", "path_eval.paper_tables": "results/paper"}


class _SourceFolderFinder(importlib.abc.MetaPathFinder):
    """Each folder of SOURCE_FOLDERS as a package under its `path_eval` name, its modules importable
    and its files readable through importlib.resources."""

    root = Path(__file__).resolve().parent.parent

    def find_spec(self, fullname, path=None, target=None):
        folder = self.root / SOURCE_FOLDERS.get(fullname, "")
        if fullname not in SOURCE_FOLDERS or not folder.is_dir():
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _SourceFolderLoader(folder), is_package=True)
        spec.submodule_search_locations = [str(folder)]
        return spec


class _SourceFolderLoader(importlib.abc.Loader):
    """A folder without code of its own; also its own resource reader (importlib.resources reads
    a hand-made namespace package's files only through a loader that says where they are)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        pass

    def get_resource_reader(self, name):
        return self

    def files(self) -> Path:
        return self.folder


def install() -> None:
    """Add the finder once, in a checkout only (an installed wheel holds the folders itself)."""
    checkout = not (Path(__file__).resolve().parent / "builtin_suites").is_dir()
    if checkout and not any(isinstance(f, _SourceFolderFinder) for f in sys.meta_path):
        sys.meta_path.append(_SourceFolderFinder())
