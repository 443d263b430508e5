"""The package layout: `kernels/` importable only as `path_eval.kernels`, every package listed."""
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "path_eval").rglob("*.py")}
    found.add("path_eval.kernels")  # a namespace folder (see kernels/README.md)
    found |= {"path_eval.kernels." + ".".join(p.parent.relative_to(ROOT / "kernels").parts)
              for p in (ROOT / "kernels").rglob("*.py")}
    assert found == listed


def test_kernels_import_only_under_the_namespace():
    """From a checkout (repo root on sys.path), `path_eval.kernels` is our folder, and transformers'
    probe for Hugging Face's `kernels` package does not mistake the folder for it."""
    code = ("import importlib.metadata as md, path_eval.kernels as k; from pathlib import Path; "
            "assert [Path(p).name for p in k.__path__] == ['kernels'], k.__path__; "
            "from transformers.utils.import_utils import is_kernels_available; "
            "found = is_kernels_available(); "
            "hf = [d for d in md.distributions() if d.metadata['Name'] == 'kernels']; "
            "assert found == bool(hf), found")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
