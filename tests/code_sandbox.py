"""The sandbox the code tests run programs in: `path_eval.sandbox` where it is installed and can run
programs here, else a double with its interface (a plain child process, no confinement: the tests'
own programs only), and a sandbox that fails the test if a program reaches it."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Limits:
    cpu_seconds: float = 10.0
    wall_seconds: float = 10.0
    memory_bytes: int = 2 << 30
    file_bytes: int = 1 << 20
    processes: int = 16


@dataclass(frozen=True)
class Outcome:
    passed: bool
    status: str
    detail: str = ""


def _run_in_child(program: str, limits: Limits | None = None) -> Outcome:
    limits = limits or Limits()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "program.py").write_text(program, errors="surrogateescape")  # a model's text may hold NUL
        try:
            done = subprocess.run([sys.executable, "program.py"], cwd=folder, capture_output=True, text=True,
                                  errors="replace", timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            return Outcome(False, "timed out")
    last = (done.stderr.strip().splitlines() or [""])[-1][:200]
    return Outcome(done.returncode == 0, "passed" if done.returncode == 0 else "failed", last)


def double(run_python) -> types.ModuleType:
    module = types.ModuleType("path_eval.sandbox")
    module.Limits, module.Outcome, module.run_python = Limits, Outcome, run_python
    module.unavailable_reason = lambda: None
    return module


def install(monkeypatch) -> None:
    """Programs run in the real sandbox where it can run here, else in a plain child process."""
    try:
        import path_eval.sandbox as real
    except ImportError:
        real = None
    if real is not None and real.unavailable_reason() is None:
        return
    monkeypatch.setitem(sys.modules, "path_eval.sandbox", double(_run_in_child))


def install_forbidding(monkeypatch) -> list:
    """A sandbox every program fails the test in; the programs it was handed, for the test to show."""
    handed = []

    def run_python(program, limits=None):
        handed.append(program)
        pytest.fail("a program reached the sandbox without --allow-code-execution")
    monkeypatch.setitem(sys.modules, "path_eval.sandbox", double(run_python))
    return handed
