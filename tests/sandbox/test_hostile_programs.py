"""Hostile programs through the sandbox (issue 49): each is contained (what it aims at on the host is
untouched, checked from the host's side), scored as a failure, and the harness carries on. A correct
program passing and a failing assert failing show the verdicts have teeth."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from path_eval.sandbox import Limits, run_python

FAST = Limits(cpu_seconds=5, wall_seconds=10)


def processes_with(marker: str) -> list[int]:
    """The host's processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # ended meanwhile
                pass
    return found


def test_a_correct_program_passes():
    outcome = run_python("def add(a, b):\n    return a + b\n\nassert add(2, 3) == 5\n", FAST)
    assert (outcome.passed, outcome.status) == (True, "passed")


def test_a_failing_assert_fails_with_its_last_line():
    outcome = run_python("def add(a, b):\n    return a - b\n\nassert add(2, 3) == 5, 'add is wrong'\n", FAST)
    assert (outcome.passed, outcome.status, outcome.detail) == (False, "failed", "AssertionError: add is wrong")


@pytest.mark.parametrize("where, error", [("run folder", "FileNotFoundError: [Errno 2] No such file or directory"),
                                         ("home", "OSError: [Errno 30] Read-only file system"),
                                         ("interpreter", "OSError: [Errno 30] Read-only file system")])
def test_writing_outside_its_folder_reaches_nothing(tmp_path, where, error):
    """The run folder (under /tmp here: hidden by the program's own /tmp), the user's home (hidden)
    and the interpreter's folder (visible, read-only): an existing file is not overwritten, a new one
    never appears."""
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    folder = {"run folder": run_folder, "home": Path.home(), "interpreter": Path(sys.prefix)}[where]
    existing, new = run_folder / "results.json", folder / f"sandbox-test-{uuid.uuid4().hex}"
    existing.write_text("{}")
    program = f"open({str(existing)!r}, 'w').write('overwritten')\n" if where == "run folder" else \
        f"open({str(new)!r}, 'w').write('escaped')\n"
    try:
        outcome = run_python(program, FAST)
        assert not new.exists()
    finally:
        new.unlink(missing_ok=True)
    assert existing.read_text() == "{}"
    assert outcome.status == "failed" and outcome.detail.startswith(error)


def test_a_socket_reaches_neither_the_hosts_localhost_nor_outside():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        local = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\n", FAST)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever connected
    assert (local.status, local.detail) == ("failed", "OSError: [Errno 101] Network is unreachable")
    outside = run_python("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=5)\n", FAST)
    assert (outside.status, outside.detail) == ("failed", "OSError: [Errno 101] Network is unreachable")
    resolve = run_python("import socket\nsocket.getaddrinfo('example.com', 80)\n", FAST)
    assert resolve.status == "failed" and resolve.detail.startswith("socket.gaierror")


def sleeper(marker: str) -> str:
    """Program text starting a child process that sleeps, `marker` in its command line."""
    return (f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}], "
            "start_new_session=True)")


def test_a_fork_bomb_is_held_by_the_process_limit_and_leaves_nothing(tmp_path):
    """RLIMIT_NPROC binds (the harness runs as root here: the kernel exempts the host's root, so the
    program must not be it), and the sleepers it started end with it."""
    marker = f"sandbox-bomb-{uuid.uuid4().hex}"
    program = ("import subprocess, sys\nstarted = 0\n"
               "try:\n"
               "    while started < 200:\n"
               f"        {sleeper(marker)}\n"
               "        started += 1\n"
               "except OSError:\n"
               "    sys.exit(f'started {started}')\n")
    outcome = run_python(program, Limits(cpu_seconds=10, wall_seconds=60, processes=16))
    assert outcome.status == "failed" and outcome.detail.startswith("started ")
    assert 0 < int(outcome.detail.split()[1]) < 16
    assert processes_with(marker) == []


def test_a_process_tree_past_the_wall_clock_is_killed_whole():
    marker = f"sandbox-tree-{uuid.uuid4().hex}"
    program = f"import subprocess, sys, time\nfor _ in range(5):\n    {sleeper(marker)}\ntime.sleep(600)\n"
    outcome = run_python(program, Limits(cpu_seconds=5, wall_seconds=3))
    assert (outcome.status, outcome.detail) == ("timed out", "wall-clock limit of 3 s")
    assert processes_with(marker) == []


def test_an_endless_loop_times_out_on_cpu_time():
    outcome = run_python("while True:\n    pass\n", Limits(cpu_seconds=1, wall_seconds=60))
    assert (outcome.passed, outcome.status, outcome.detail) == (False, "timed out", "CPU-time limit of 1 s")


@pytest.mark.parametrize("program", ["block = bytearray(1 << 30)\n",
                                     "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 20))\n"])
def test_a_memory_hog_runs_out_of_memory(program):
    outcome = run_python(program, Limits(cpu_seconds=10, wall_seconds=60, memory_bytes=256 << 20))
    assert (outcome.status, outcome.detail) == ("out of memory", "MemoryError")


@pytest.mark.parametrize("program, error", [
    ("with open('big', 'wb') as big:\n    big.write(bytes(2 << 20))\n", "[Errno 27] File too large"),
    ("for number in range(100):\n    with open(f'part{number}', 'wb') as part:\n        part.write(bytes(1 << 20))\n",
     "[Errno 28] No space left on device"),
])
def test_a_file_size_bomb_fails(program, error):
    """One file past the file-size limit, or many filling the program's folder."""
    outcome = run_python(program, Limits(cpu_seconds=5, wall_seconds=10, file_bytes=(1 << 20) + 4096))
    assert (outcome.status, outcome.detail) == ("failed", f"OSError: {error}")


def test_the_harnesss_secrets_are_not_in_its_environment(monkeypatch):
    secret = f"hf_{uuid.uuid4().hex}"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    outcome = run_python("import os\nprint(os.environ['HF_TOKEN'])\n", FAST)
    assert (outcome.status, outcome.detail) == ("failed", "KeyError: 'HF_TOKEN'")
    hunt = ("import glob, sys\n"
            "for path in ['/proc/self/environ', *glob.glob('/proc/*/environ')]:\n"
            "    try:\n"
            f"        if {secret!r}.encode() in open(path, 'rb').read():\n"
            "            sys.exit(0)\n"
            "    except OSError:\n"
            "        pass\n"
            f"sys.exit('no secret found')\n")
    outcome = run_python(hunt, FAST)
    assert (outcome.status, outcome.detail) == ("failed", "no secret found")


def test_signals_sent_outward_reach_nothing():
    """The program signals a process of the host (by its host pid), its own parent and every process
    it may: the host's process lives on, and so does the sandbox's init (else the program would be
    killed, not fail)."""
    host_process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        program = ("import os, signal, sys\n"
                   f"for pid, number in (({host_process.pid}, signal.SIGKILL), ({os.getpid()}, signal.SIGKILL),"
                   " (os.getppid(), signal.SIGKILL), (-1, signal.SIGKILL)):\n"
                   "    try:\n"
                   "        os.kill(pid, number)\n"
                   "    except OSError:\n"
                   "        pass\n"
                   "sys.exit('signals sent')\n")
        outcome = run_python(program, FAST)
        assert host_process.poll() is None
    finally:
        host_process.kill()
        host_process.wait()
    assert (outcome.status, outcome.detail) == ("failed", "signals sent")


def test_it_has_no_capabilities_and_cannot_get_any():
    """Remounting / writable, mounting a tmpfs and making a user namespace of its own (where it would
    be root again): each refused."""
    program = ("import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nerrors = []\n"
               "for call in (lambda: libc.mount(None, b'/', None, 32 | 4096, None),\n"
               "             lambda: libc.mount(b'tmpfs', b'/tmp', b'tmpfs', 0, None),\n"
               "             lambda: libc.unshare(0x10000000)):\n"
               "    errors.append(call() == -1 and ctypes.get_errno())\n"
               "sys.exit(f'errors {errors}')\n")
    outcome = run_python(program, FAST)
    # EPERM for the mounts; ENOSPC for the namespace: the sandbox allows none below its own
    assert (outcome.status, outcome.detail) == ("failed", "errors [1, 1, 28]")


@pytest.mark.parametrize("number, name", [(11, "SIGSEGV"), (40, "signal 40")])
def test_a_program_killed_by_a_signal_is_killed(number, name):
    outcome = run_python(f"import os\nos.kill(os.getpid(), {number})\n", FAST)
    assert (outcome.passed, outcome.status, outcome.detail) == (False, "killed", f"killed by {name}")


def test_output_is_drained_and_the_detail_bounded_and_printable():
    """Megabytes of output cost the harness nothing but reading; the detail is the last line, its
    control characters escaped, cut to 200 characters."""
    program = ("import sys\nsys.stdout.write('x' * (50 << 20))\nsys.stderr.write('y' * (50 << 20) + '\\n')\n"
               "sys.exit('\\x1b[31m' + 'z' * 500)\n")
    outcome = run_python(program, FAST)
    assert outcome.status == "failed"
    assert outcome.detail == ("\\x1b[31m" + "z" * 500)[:197] + "..."


def test_programs_run_from_several_threads_keep_their_own_verdicts():
    programs = [f"import sys\nsys.exit({number} % 2)\n" for number in range(6)]
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(lambda program: run_python(program, FAST), programs))
    assert [outcome.passed for outcome in outcomes] == [number % 2 == 0 for number in range(6)]
