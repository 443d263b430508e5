"""The sandbox started by a user other than root: the path most users take (only their own ids can be
mapped, their supplementary groups cannot be dropped). Where the tests run as another user, every
sandbox test takes it; run as root, this test takes it by starting the harness as nobody."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NOBODY = 65534
# Each program's outcome, as the harness running as nobody reports it.
PROGRAMS = {
    "identity": "import os, sys\nsys.exit(f'{os.getuid()} {os.getgroups()}')\n",
    "write": "open(MARKER, 'w').write('escaped')\n",
    "secret": "import os\nprint(os.environ['HF_TOKEN'])\n",
    "signals": ("import os, sys\nfor pid in (os.getppid(), 1, -1):\n    try:\n        os.kill(pid, 9)\n"
                "    except OSError:\n        pass\nsys.exit('signals sent')\n"),
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=5)\n",
    "bomb": ("import subprocess, sys\nstarted = 0\ntry:\n    while started < 200:\n"
             "        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
             "        started += 1\nexcept OSError:\n    sys.exit(f'started {started}')\n"),
}
HARNESS = """
import json, sys
from path_eval.sandbox import Limits, run_python
programs = json.loads(sys.argv[1])
print(json.dumps({name: run_python(text, Limits(processes=8)).__dict__ for name, text in programs.items()}))
"""


def runs_as_nobody(python: str) -> bool:
    try:
        return subprocess.run([python, "-I", "-c", "pass"], user=NOBODY, group=NOBODY, extra_groups=[],
                              cwd="/", capture_output=True).returncode == 0
    except OSError:  # not even started: a folder on its path is closed to nobody
        return False


@pytest.mark.skipif(os.geteuid() != 0, reason="as a user other than root, every sandbox test takes this path")
def test_a_users_sandbox_confines_as_roots_does():
    system_python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    python = next((candidate for candidate in (sys.executable, system_python) if candidate
                   and runs_as_nobody(candidate)), None)
    if python is None:
        pytest.skip("no Python interpreter here that user nobody may run")
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))  # outside /tmp's private folders: nobody reaches it
    try:
        package = folder / "path_eval"
        shutil.copytree(ROOT / "path_eval" / "sandbox", package / "sandbox",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for module in ("errors.py", "terminal.py"):
            shutil.copy(ROOT / "path_eval" / module, package / module)
        (package / "__init__.py").write_text("")
        marker = folder / f"escaped-{uuid.uuid4().hex}"
        programs = {name: text.replace("MARKER", repr(str(marker))) for name, text in PROGRAMS.items()}
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o777 if path == folder else 0o755 if path.is_dir() else 0o644)
        done = subprocess.run([python, "-c", HARNESS, json.dumps(programs)], user=NOBODY, group=NOBODY,
                              extra_groups=[], cwd=folder, env={"PYTHONPATH": str(folder), "HF_TOKEN": "hf_secret"},
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outcomes = json.loads(done.stdout)
        assert not marker.exists()
    finally:
        shutil.rmtree(folder)
    assert outcomes["identity"] == {"passed": False, "status": "failed", "detail": "1000 []"}
    # The harness's working folder, the user's own and writable, is hidden from the program
    assert outcomes["write"]["detail"].startswith("FileNotFoundError: [Errno 2] No such file or directory")
    assert outcomes["secret"]["detail"] == "KeyError: 'HF_TOKEN'"
    assert outcomes["signals"]["detail"] == "signals sent"  # the init, of the same user, lives on
    assert outcomes["socket"]["detail"] == "OSError: [Errno 101] Network is unreachable"
    # The keeper and the init run as the program's user here; the limit is the program's all the same
    assert outcomes["bomb"]["detail"] == "started 7"
