"""Editors and static readers resolve `path_eval.kernels` imports: jedi (the engine of many editors'
go-to-definition) follows each imported name to its definition, in the triton backend and in the
whole package. They would not if `kernels/` reached the package only through an import hook;
the symlink path_eval/kernels is what they follow (kernels/README.md)."""
import ast
import os
from pathlib import Path

import pytest

jedi = pytest.importorskip("jedi")

ROOT = Path(__file__).resolve().parents[1]


def kernel_imports(file: Path) -> list[tuple[int, int, str]]:
    """(line, column, name) of every name imported from `path_eval.kernels...` in `file`."""
    source = file.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("path_eval.kernels"):
            names = [alias.name for alias in node.names]
            for line in range(node.lineno, node.end_lineno + 1):
                text = lines[line - 1]
                start = text.index(" import ") + len(" import ") if line == node.lineno else 0
                for name in list(names):
                    column = next((i for i in range(start, len(text)) if text.startswith(name, i)
                                   and not (text[i - 1:i].isidentifier() or text[i + len(name):i + len(name) + 1].isidentifier())), None)
                    if column is not None:
                        found.append((line, column, name))
                        names.remove(name)
            assert not names, (file, node.lineno, names)
    return found


def resolved(file: Path) -> tuple[int, list[str]]:
    """How many kernel imports `file` has, and those jedi cannot follow to a definition."""
    script = jedi.Script(path=str(file), project=jedi.Project(ROOT))
    imports = kernel_imports(file)
    missing = [f"{file.relative_to(ROOT)}:{line} {name}" for line, column, name in imports
               if not [d for d in script.goto(line, column, follow_imports=True) if d.module_path is not None]]
    return len(imports), missing


def package_files() -> list[Path]:
    """Every module of the package, the kernels (reached through the symlink) included."""
    return sorted(Path(folder, name) for folder, _, names in os.walk(ROOT / "path_eval", followlinks=True)
                  for name in names if name.endswith(".py"))


def test_the_triton_backends_kernel_imports_resolve():
    count, missing = resolved(ROOT / "path_eval/models/attention/kernel_backend.py")
    assert count >= 2 and missing == []


def test_every_kernel_import_in_the_package_resolves():
    counts, missing = zip(*(resolved(file) for file in package_files()))
    assert sum(counts) > 40, sum(counts)
    assert [m for file_missing in missing for m in file_missing] == []
