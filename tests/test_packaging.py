"""The package layout and the wheel: `kernels/` importable only as `path_eval.kernels` (through the
symlink path_eval/kernels), every package listed, and a wheel that holds everything a run reads
(suites, paper tables, tokenizer, kernels, the kernels once) and nothing else of `results/`."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from path_eval.source_folders import SOURCE_FOLDERS

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
TOKENIZER_FILES = ("tokenizer.model", "LICENSE", "README.md")


def test_every_package_folder_is_listed_in_pyproject():
    found = {".".join(Path(folder).relative_to(ROOT).parts)  # into path_eval/kernels, the symlink
             for folder, _, files in os.walk(ROOT / "path_eval", followlinks=True) if any(f.endswith(".py") for f in files)}
    for name, folder in SOURCE_FOLDERS.items():  # the mapped data folders (path_eval/source_folders.py)
        found.add(name)
        found |= {".".join([name, *p.parent.relative_to(ROOT / folder).parts]) for p in (ROOT / folder).rglob("*.py")}
    assert found == set(SETUPTOOLS["packages"])


def test_the_checkout_finder_maps_the_folders_pyproject_maps():
    """A source checkout finds the mapped folders through path_eval's own finder, a wheel through
    package-dir: both must name the same folders."""
    mapped = {name: folder for name, folder in SETUPTOOLS["package-dir"].items() if name != "path_eval"}
    assert SETUPTOOLS["package-dir"]["path_eval"] == "path_eval" and mapped == SOURCE_FOLDERS


def test_kernels_import_only_under_the_namespace():
    """From a checkout (repo root on sys.path), `path_eval.kernels` is our folder (through the
    symlink), and transformers' probe for Hugging Face's `kernels` package does not mistake the
    folder for it."""
    code = ("import importlib.metadata as md, path_eval.kernels as k; from pathlib import Path; "
            f"assert [Path(p).resolve() for p in k.__path__] == [Path({str(ROOT / 'kernels')!r})], k.__path__; "
            "from transformers.utils.import_utils import is_kernels_available; "
            "found = is_kernels_available(); "
            "hf = [d for d in md.distributions() if d.metadata['Name'] == 'kernels']; "
            "assert found == bool(hf), found")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_no_test_folder_is_a_package_that_hides_an_installed_one():
    """pytest puts tests/ (conftest.py's folder) on sys.path, so a tests/ subfolder with an __init__.py is importable by
    its bare name and hides any installed package of that name: tests/kernels/ as a package hides
    Hugging Face's `kernels`, which transformers imports, and every model test fails."""
    assert sorted(p.parent.name for p in (ROOT / "tests").glob("*/__init__.py")) == []


def test_the_installed_checkout_serves_the_mapped_folders_outside_it(tmp_path):
    """`pip install -e .` (CI's install), used from elsewhere: the kernels import and the suites are
    found. Skipped where the installed path_eval is another checkout (a worktree beside it)."""
    code = ("import json, path_eval, path_eval.kernels.path_attn as k; from path_eval.suites import available_suites; "
            "print(json.dumps({'package': path_eval.__file__, 'kernels': k.__file__, 'suites': available_suites()}))")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if run.returncode and "No module named 'path_eval'" in run.stderr:
        pytest.skip("path_eval is not installed")
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    if not Path(found["package"]).is_relative_to(ROOT):
        pytest.skip(f"the installed path_eval is {found['package']}, not this checkout's")
    assert Path(found["kernels"]).resolve().is_relative_to(ROOT / "kernels")
    assert found["suites"] == sorted(p.stem for p in (ROOT / "suites").glob("*.yaml"))


def test_resource_accessors_find_the_shipped_data_in_the_checkout():
    from path_eval.package_data import mistral_v1_tokenizer, paper_tables
    from path_eval.suites import available_suites

    assert available_suites() == sorted(p.stem for p in (ROOT / "suites").glob("*.yaml")) != []
    tables = sorted(p.name for p in (ROOT / "results/paper").glob("*.json"))
    assert sorted(p.name for p in paper_tables().iterdir() if p.name.endswith(".json")) == tables != []
    assert all((mistral_v1_tokenizer() / name).is_file() for name in TOKENIZER_FILES)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built offline from a copy of the files the build reads (a checkout's stale `build/`
    folder would otherwise leak deleted files into it), with a stand-in model in the zoo folder."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in SETUPTOOLS["package-dir"].values():
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    standin = source / "path_eval/zoo/models/standin-tiny"
    standin.mkdir(parents=True, exist_ok=True)
    (standin / "config.json").write_text("{}")
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(out), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    [built] = out.glob("path_eval-*.whl")
    return built


def test_the_wheel_holds_every_suite_table_tokenizer_and_kernel_and_no_other_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {n for n in names if not n.endswith(".py") and ".dist-info/" not in n}
    expected = ({f"path_eval/builtin_suites/{p.name}" for p in (ROOT / "suites").glob("*.yaml")}
                | {f"path_eval/paper_tables/{p.name}" for p in (ROOT / "results/paper").glob("*.json")}
                | {f"path_eval/models/tokenizers/mistral-v1/{name}" for name in TOKENIZER_FILES}
                | {f"path_eval/{p.relative_to(ROOT / 'path_eval')}" for folder in ("zoo/models", "zoo/heldout")
                   for p in (ROOT / "path_eval" / folder).rglob("*") if p.is_file()}
                | {"path_eval/zoo/models/standin-tiny/config.json"})
    assert data == expected
    kernels = {f"path_eval/kernels/{p.relative_to(ROOT / 'kernels')}" for p in (ROOT / "kernels").rglob("*.py")}
    assert kernels and kernels <= names
    listed = zipfile.ZipFile(wheel).namelist()
    assert len(listed) == len(names), "no file twice"
    assert not [n for n in names if "kernels/" in n and not n.startswith("path_eval/kernels/")], "kernels only once"
    assert all(n.startswith(("path_eval/", "path_eval-")) for n in names), "only the path_eval package at top level"


def test_the_wheel_ships_the_checkouts_tokenizer_and_no_mistral_common(wheel):
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read("path_eval/models/tokenizers/mistral-v1/tokenizer.model")
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [line for line in archive.read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")]
    checkout = (ROOT / "path_eval/models/tokenizers/mistral-v1/tokenizer.model").read_bytes()
    assert hashlib.sha256(shipped).hexdigest() == hashlib.sha256(checkout).hexdigest()
    assert requires and not any("mistral" in line.lower() for line in requires)


@pytest.mark.slow
def test_the_installed_wheel_finds_its_data_and_has_no_git_revision(wheel, tmp_path):
    """The wheel's own files, unpacked inside an unrelated git repository (a virtual environment in
    someone's project): suites, paper tables and tokenizer found through the accessors, and no
    revision taken from the surrounding repository."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "unrelated"], check=True)
    site = tmp_path / "venv/lib/site-packages"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import json, path_eval; from path_eval.suites import available_suites, load_suite; "
            "from path_eval.package_data import paper_tables, mistral_v1_tokenizer; "
            "from path_eval.results.provenance import git_revision; "
            "print(json.dumps({'package': path_eval.__file__, 'suites': available_suites(), "
            "'ruler_tasks': len(load_suite('ruler').tasks), "
            "'tables': sorted(p.name for p in paper_tables().iterdir()), "
            "'tokenizer': (mistral_v1_tokenizer() / 'tokenizer.model').is_file(), 'git': git_revision()}))")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert Path(found["package"]).is_relative_to(site)
    assert found["suites"] == sorted(p.stem for p in (ROOT / "suites").glob("*.yaml"))
    assert found["ruler_tasks"] > 0 and found["tokenizer"] and found["git"] is None
    assert found["tables"] == sorted(p.name for p in (ROOT / "results/paper").glob("*.json"))
