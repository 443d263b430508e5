"""Where the system will not make the namespaces, the sandbox says why in one line naming the fix,
and `run_python` refuses without running anything: never a fallback that runs code unconfined. A
limit that would not limit is refused as well."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from path_eval.errors import PathEvalError
from path_eval.sandbox import launch, run_python, unavailable_reason

# The real bootstrap, its libc's unshare failing as it does where user namespaces are not allowed.
UNSHARE_REFUSED = f"""
import ctypes, errno, sys
sys.path.insert(0, {str(Path(launch.bootstrap.__file__).parent)!r})
import bootstrap

class Refusing:
    def unshare(self, flags):
        ctypes.set_errno(errno.EPERM)
        return -1

    def __getattr__(self, name):
        return getattr(ctypes.CDLL(None, use_errno=True), name)

bootstrap._libc = Refusing()
bootstrap.main()
"""


@pytest.fixture
def refused(monkeypatch):
    """The probe forgotten, each keeper started counted, and its unshare refused."""
    started = []

    def command(config: dict) -> list[str]:
        started.append(config)
        return [sys.executable, "-I", "-S", "-c", UNSHARE_REFUSED, json.dumps(config)]

    monkeypatch.setattr(launch, "_probed", [])
    monkeypatch.setattr(launch, "bootstrap_command", command)
    return started


def test_the_reason_names_the_failure_and_the_fix_in_one_line(refused):
    reason = unavailable_reason()
    assert reason is not None and "\n" not in reason
    assert "unshare: EPERM (Operation not permitted)" in reason
    assert "user.max_user_namespaces" in reason and "docs/code-execution.md" in reason


def test_run_python_refuses_without_starting_a_program(refused):
    reason = unavailable_reason()
    probes = len(refused)
    with pytest.raises(PathEvalError) as refusal:
        run_python("print('ran')\n")
    assert str(refusal.value) == reason
    assert len(refused) == probes  # the probe's answer is kept: no keeper started for the program


def test_the_probe_runs_once_per_process(refused):
    unavailable_reason()
    unavailable_reason()
    assert len(refused) == 1


def test_this_machine_can_run_programs():
    """The hostile-program tests need the sandbox; here it must be available."""
    assert unavailable_reason() is None


@pytest.mark.parametrize("limit", ["cpu_seconds", "wall_seconds", "memory_bytes", "file_bytes", "processes"])
def test_a_limit_of_zero_is_refused(limit):
    with pytest.raises(PathEvalError, match=f"sandbox limit {limit} is 0: give a number above 0"):
        launch.Limits(**{limit: 0})
