"""`--model` references: folders, zoo:NAME, hub ids with a revision read from a local mirror of the hub
cache's layout (never the network), and NAME= display names, down to the records' provenance."""
import hashlib
import json
import shutil
from pathlib import Path

import huggingface_hub.constants
import pytest

from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.models.zoo import zoo_models
from path_eval.plan.models import resolve_model, resolve_models
from path_eval.results import load_records
from tests.helpers import save_tiny_model

MAIN = "a" * 40
TAGGED = "b" * 40


def add_snapshot(cache: Path, repo: str, commit: str, checkpoint: Path, refs=()) -> Path:
    """The hub cache's layout for one commit, as huggingface_hub writes it: the files' bytes in
    blobs/<sha256>, snapshots/<commit>/<file> symlinks to them, refs/<ref> holding the commit."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir(exist_ok=True)
    for file in checkpoint.iterdir():
        blob = root / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
        shutil.copyfile(file, blob)
        (snapshot / file.name).symlink_to(Path("..", "..", "blobs", blob.name))
    for ref in refs:
        (root / "refs").mkdir(exist_ok=True)
        (root / "refs" / ref).write_text(commit)
    return snapshot


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """HF_HUB_CACHE at a mirror holding org/tiny at main and at tag v1 (another commit)."""
    cache = tmp_path / "hub"
    checkpoint = save_tiny_model(tmp_path / "checkpoint")
    add_snapshot(cache, "org/tiny", MAIN, checkpoint, refs=["main"])
    add_snapshot(cache, "org/tiny", TAGGED, checkpoint, refs=["v1"])
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return cache


def test_a_hub_id_resolves_to_its_cached_snapshot_and_commit(hub_cache):
    [main_ref] = resolve_model("org/tiny")
    assert (main_ref.name, main_ref.source, main_ref.revision) == ("org/tiny", "org/tiny", MAIN)
    assert main_ref.path == hub_cache / "models--org--tiny" / "snapshots" / MAIN
    assert (main_ref.path / "config.json").is_file()
    [tagged] = resolve_model("org/tiny@v1")
    assert (tagged.revision, tagged.source) == (TAGGED, "org/tiny@v1")
    [pinned] = resolve_model(f"org/tiny@{TAGGED}")
    assert pinned.path == tagged.path


@pytest.mark.parametrize("reference, wanted", [("org/absent", "org/absent@main"), ("org/tiny@v2", "org/tiny@v2")])
def test_a_cache_miss_is_one_line_naming_the_repo_revision_and_download(hub_cache, reference, wanted):
    with pytest.raises(PathEvalError) as err:
        resolve_model(reference)
    message = str(err.value)
    assert f"hub model {wanted} is not in the Hugging Face cache" in message and "\n" not in message
    assert f"`python eval.py download --model {reference}`" in message


def test_an_existing_folder_wins_over_a_hub_id(hub_cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_tiny_model(tmp_path / "org" / "tiny")
    [folder] = resolve_model("org/tiny")
    assert (folder.path, folder.revision, folder.name) == (Path("org/tiny"), None, "tiny")


def test_display_names_and_collisions(hub_cache):
    rope = zoo_models("rope")[0]
    named = resolve_models(["mine=org/tiny@v1", "zoo:rope", "other=" + str(rope)])
    assert [(m.name, m.source, m.revision) for m in named] == [
        ("mine", "org/tiny@v1", TAGGED), ("rope", "zoo:rope", None), ("other", str(rope), None)]
    both = resolve_models(["org/tiny", "org/tiny@v1"])  # default names collide: the whole reference
    assert [m.name for m in both] == ["org/tiny", "org/tiny@v1"]
    with pytest.raises(PathEvalError, match="two models are named 'x': give each its own NAME="):
        resolve_models(["x=org/tiny", "x=zoo:rope"])
    with pytest.raises(PathEvalError, match="zoo is .* give NAME=zoo:MODEL"):
        resolve_models(["all=zoo"])
    with pytest.raises(PathEvalError, match=r"not a directory \(no such folder\)"):
        resolve_models(["./no/such/folder"])


def test_a_hub_model_runs_under_its_display_name_with_source_and_revision(hub_cache, tmp_path):
    """The ci suite's held-out perplexity runs on models named rope (and fox, ...): the hub model runs
    there under that display name."""
    out = tmp_path / "out"
    assert main(["run", "--suite", "ci", "--tasks", "heldout", "--lengths", "512", "--model", "rope=org/tiny@v1",
                 "--out", str(out), "--quiet"]) == 0
    records = [r for r in load_records(out) if r.bucket is None]
    assert [r.model for r in records] == ["rope"] and (out / "samples" / "rope" / "heldout@512.jsonl").is_file()
    provenance = records[0].provenance
    assert (provenance.model_source, provenance.model_revision) == ("org/tiny@v1", TAGGED)
    assert provenance.model_path == str(hub_cache / "models--org--tiny" / "snapshots" / TAGGED)
    [planned] = json.loads((out / "plan.json").read_text())["models"]
    assert (planned["name"], planned["revision"]) == ("rope", TAGGED)


def test_download_fetches_into_the_hub_cache_and_reports_the_commit(hub_cache, capsys):
    """`download --model` goes through snapshot_download; offline it finds the mirror's snapshot."""
    assert main(["download", "--model", "org/tiny@v1"]) == 0
    assert capsys.readouterr().out.strip() == \
        f"org/tiny@v1: commit {TAGGED} -> {hub_cache / 'models--org--tiny' / 'snapshots' / TAGGED}"
