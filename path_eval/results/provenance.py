"""Versions, the harness revision and the run settings recorded with every result (the model's
identity, which they extend, is `path_eval.models.identity`'s)."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path

from path_eval.version import __version__

REPO = Path(__file__).resolve().parents[2]


REVISION_VARIABLE = "PATH_EVAL_GIT_REVISION"


def git_revision() -> str | None:
    """HEAD of the harness checkout, with '+dirty' when it has uncommitted changes; None when the
    package is not a checkout of its own (an installed wheel, even one inside some other repository).
    `$PATH_EVAL_GIT_REVISION`, when set, is taken instead: a copy of the tree sent to another machine
    can carry a `.git` older than its files, whose HEAD would name the wrong commit, and the sender
    knows the right one. Read-only (`--no-optional-locks`): a `git status` that refreshes the index
    takes `.git/index.lock`, and a git command run meanwhile in the same checkout fails on it."""
    given = os.environ.get(REVISION_VARIABLE, "").strip()
    if given:
        return given
    git = ["git", "--no-optional-locks", "-C", str(REPO)]
    try:
        head = subprocess.run([*git, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode:
            return None
        toplevel, revision = head.stdout.splitlines()
        if Path(toplevel).resolve() != REPO:
            return None
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return revision + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str]:
    import lm_eval
    import torch
    import transformers

    return {"harness_version": __version__, "lm_eval_version": getattr(lm_eval, "__version__", "?"),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "python_version": platform.python_version(), "hostname": socket.gethostname()}


def run_provenance(identity: dict, seed: int, limit: int | None, batch_size: int, started: str,
                   counters: list[dict], environment: dict) -> dict:
    """A model's provenance fields common to all its records: identity, run settings, the work its
    processes did over every segment of a resumed run (`counters`: one dict per process) and the
    environment. The wall time is the slowest process's."""
    return identity | {
        "seed": seed, "limit": limit, "batch_size": batch_size, "started_at": started,
        "wall_time_s": round(max(c["wall"] for c in counters), 3), "tokens": sum(c["tokens"] for c in counters),
        # processes run side by side: the run's rate is the sum of theirs
        "tokens_per_second": round(sum(c["tokens"] / c["seconds"] for c in counters if c["seconds"]), 1) or None,
        "truncated_requests": sum(c["truncated"] for c in counters),
        "requests_computed": sum(c["requests"] for c in counters), "processes": len(counters),
    } | environment


def environment() -> dict:
    """Versions and the harness revision, recorded once per run."""
    return versions() | {"git_revision": git_revision()}
