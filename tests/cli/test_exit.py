"""The command line's exit (`path_eval.cli.leave`): after a command that imported torch, without the
interpreter's teardown, but only where nothing is left that the teardown would finish (another thread
the interpreter waits for, a child process, a W&B run); what was printed is flushed either way."""
import subprocess
import sys

import pytest

from tests.helpers import ROOT

PROBE = """
import atexit, sys, threading, time
{setup}
from path_eval.cli import leave
atexit.register(lambda: print("teardown ran", flush=True))
print("written before", end="")  # buffered: flushed by leave
leave(3)
"""


@pytest.mark.parametrize("setup, teardown", [
    ("import torch", False),  # the model stack imported, nothing running: the fast exit
    ("", True),  # no torch (list, --help): the usual exit
    ("import torch; threading.Thread(target=time.sleep, args=(0.5,)).start()", True),  # a thread to wait for
    ("import torch, multiprocessing; multiprocessing.get_context('spawn').Process(target=time.sleep, args=(2,)).start()",
     True),  # a child process
    ("import torch; import types; sys.modules['wandb'] = types.ModuleType('wandb')", True),  # W&B may upload at exit
])
def test_leave_skips_the_teardown_only_where_nothing_is_left(setup, teardown):
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stdout.startswith("written before")
    assert ("teardown ran" in done.stdout) is teardown


def test_a_profiled_command_still_writes_its_profile(tmp_path):
    """`python -m cProfile -o FILE` writes the profile at the exit `leave` would otherwise skip (cProfile
    itself ends with status 0 after a SystemExit)."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE.format(setup="import torch"))
    profile = tmp_path / "run.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), str(script)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("written before") and "teardown ran" in done.stdout and profile.stat().st_size > 0
