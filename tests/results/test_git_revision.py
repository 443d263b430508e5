"""git_revision reads the checkout without writing to it, and names no revision for a package that
is not a checkout of its own."""
import os
import subprocess

import pytest

from path_eval.results import provenance


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A committed repository whose index is stale (a tracked file touched since): a `git status`
    that may take optional locks refreshes and rewrites the index, under `.git/index.lock`."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "file.txt").write_text("content\n")
    git(tmp_path, "add", "file.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    later = (tmp_path / "file.txt").stat().st_mtime + 10
    os.utime(tmp_path / "file.txt", (later, later))
    return tmp_path


def test_reads_head_and_leaves_the_index_alone(checkout, monkeypatch):
    monkeypatch.setattr(provenance, "REPO", checkout)
    index = (checkout / ".git/index").read_bytes()
    assert provenance.git_revision() == git(checkout, "rev-parse", "HEAD")
    assert (checkout / ".git/index").read_bytes() == index
    git(checkout, "status", "--porcelain")  # the same read with optional locks does write here
    assert (checkout / ".git/index").read_bytes() != index


def test_dirty_when_a_tracked_file_changed(checkout, monkeypatch):
    monkeypatch.setattr(provenance, "REPO", checkout)
    (checkout / "file.txt").write_text("changed\n")
    assert provenance.git_revision() == git(checkout, "rev-parse", "HEAD") + "+dirty"


def test_none_for_a_package_inside_another_repository(checkout, monkeypatch):
    site = checkout / "venv/lib/site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(provenance, "REPO", site)
    assert provenance.git_revision() is None


def test_the_callers_revision_overrides_a_lagging_git(checkout, monkeypatch):
    """A tree sent to a GPU host whose .git is older than its files: the sender names the commit."""
    monkeypatch.setattr(provenance, "REPO", checkout)
    monkeypatch.setenv(provenance.REVISION_VARIABLE, " e8ab1ee ")
    assert provenance.git_revision() == "e8ab1ee"
    monkeypatch.setenv(provenance.REVISION_VARIABLE, "")  # empty: git decides
    assert provenance.git_revision() == git(checkout, "rev-parse", "HEAD")
