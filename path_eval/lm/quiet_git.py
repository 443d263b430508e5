"""lm-eval's `simple_evaluate` stores the git commit of the working directory in its results by
running `git describe`, whose "fatal: not a git repository" reaches the terminal of every run
started outside a checkout. The same lookup here keeps git's own error messages to itself; the
run's provenance records the harness's revision separately (`path_eval.results.provenance`)."""
from __future__ import annotations

import os
import subprocess

import lm_eval.evaluator
from lm_eval.loggers.utils import get_commit_from_path


def git_commit_hash() -> str | None:
    """lm-eval's `get_git_commit_hash`, git's stderr captured: `git describe --always` in the working
    directory, else the commit its .git folder names, else None."""
    try:
        return subprocess.run(["git", "describe", "--always"], capture_output=True, text=True,  # noqa: S607
                              check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return get_commit_from_path(os.getcwd())


lm_eval.evaluator.get_git_commit_hash = git_commit_hash
