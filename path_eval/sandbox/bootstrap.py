"""The sandbox's child side: run as a script (`python -I -S bootstrap.py CONFIG`) by
`path_eval.sandbox.launch`, it builds the namespaces, the mounts and the limits, then runs the
program. It imports nothing but the standard library, and nothing of the harness: it runs in a
fresh interpreter started with a minimal environment, so no state of the harness (its threads, its
open files, its variables) reaches the program.

Three processes, each for a reason:
- the *keeper* (this script's first process) unshares the user, mount, network, PID, IPC and UTS
  namespaces at once; the harness then writes its uid and gid maps (only a process outside the new
  user namespace may map ids other than its own: the harness, when it runs as root, maps the
  program to nobody). The keeper makes every mount read-only, hides the host's private and
  temporary folders and mounts the program's folder, then forks the init and holds the wall clock:
  killing the init ends every process of the namespace (fork bombs included) before the keeper's
  wait returns, so nothing outlives `run_python`.
- the *init*, PID 1 of the new PID namespace, mounts a /proc of that namespace (the host's shows the
  harness's processes), forbids further user namespaces, forks the program and reaps every orphan.
  The program cannot kill it: PID 1 ignores signals it has no handler for.
- the *program*, limited (rlimits), without capabilities (its uid inside is not 0, so exec drops
  them) and with no way to regain any, runs `python -I program.py` in its own folder.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import resource
import select
import signal
import sys

# The keeper's exit status tells the harness the verdict (the program's own status is not enough:
# a program exiting 3 must not read as a CPU timeout).
PASSED, FAILED, WALL_CLOCK, CPU_TIME, SETUP_FAILED = 0, 1, 2, 3, 125
SIGNALLED = 64  # + the signal number: the program was killed by that signal
# The handshake: the keeper says it has unshared, the harness writes the id maps, then the program.
UNSHARED = b"unshared\n"
# The program's uid and gid inside: not 0, so that exec leaves it no capabilities.
PROGRAM_ID = 1000
PROGRAM_FOLDER = "/tmp"  # a fresh tmpfs over the host's /tmp: the program's cwd and HOME
FOLDER_FILES = 4  # the folder holds this many files of the largest size a file may have

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
LOCKED_DOWN = MS_RDONLY | MS_NOSUID | MS_NODEV
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
# The devices a program may open; the host's /dev is hidden (a device node, unlike a file, can be
# written through a read-only mount).
DEVICES = ("null", "zero", "full", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class SetupError(Exception):
    """A step of the sandbox's setup failed: the program must not run."""

    def __init__(self, step: str, number: int | None = None):
        super().__init__(step if number is None else
                         f"{step}: {errno.errorcode.get(number, number)} ({os.strerror(number)})")
        self.errno = number


def _check(result: int, step: str) -> None:
    if result != 0:
        raise SetupError(step, ctypes.get_errno())


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def die_with_parent() -> None:
    """Be killed when the process that started this one dies (the harness, killed or interrupted)."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")


def mount_points() -> list[tuple[str, str]]:
    """(mount point, its per-mount options) of every mount of this mount namespace."""
    unescape = lambda text: re.sub(r"\\([0-7]{3})", lambda octal: chr(int(octal[1], 8)), text)  # noqa: E731
    with open("/proc/self/mountinfo") as lines:
        return [(unescape(fields[4]), fields[5]) for fields in (line.split() for line in lines)]


def make_read_only() -> None:
    """Every mount read-only, nosuid and nodev (noexec kept where set: a flag the host set is locked
    and may not be cleared). /dev is left out: it is replaced whole (`replace_dev`), and its devices
    are bound from the original mount, which must keep its devices usable."""
    for point, options in mount_points():
        if point == "/dev" or point.startswith("/dev/"):
            continue
        flags = MS_REMOUNT | MS_BIND | LOCKED_DOWN | (MS_NOEXEC if "noexec" in options.split(",") else 0)
        try:
            mount(None, point, None, flags)
        except SetupError as error:
            # A mount point that vanished, or one this user cannot reach (nor can the program, with
            # the same user's rights), is no way out; any other failure is.
            if error.errno not in (errno.ENOENT, errno.EACCES):
                raise


def bind_from(fd: int, target: str) -> None:
    """Bind what `fd` (opened before its path was hidden) refers to at `target`."""
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)


def replace_dev() -> None:
    """A /dev holding only the harmless devices, bound from the host's, and the usual links."""
    devices = {name: os.open(f"/dev/{name}", os.O_PATH) for name in DEVICES}
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for name, fd in devices.items():
        os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
        bind_from(fd, f"/dev/{name}")
        os.close(fd)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def hide_and_keep(hidden: list[str], kept: list[str], folder_bytes: int) -> None:
    """Empty read-only tmpfs over each hidden folder, a fresh writable one over PROGRAM_FOLDER, and the
    kept paths (the interpreter's) bound back where a hidden folder covered them."""
    kept_fds = {path: os.open(path, os.O_PATH) for path in kept}
    mount("tmpfs", PROGRAM_FOLDER, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={folder_bytes},nr_inodes=4096,mode=700,uid={PROGRAM_ID},gid={PROGRAM_ID}")
    for folder in hidden:
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,nr_inodes=4096,mode=755")
    for path, fd in kept_fds.items():
        if any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in (*hidden, PROGRAM_FOLDER)):
            os.makedirs(path, 0o755, exist_ok=True)
            bind_from(fd, path)  # read-only already: bound from a mount made read-only
        os.close(fd)
    for folder in hidden:
        mount(None, folder, None, MS_REMOUNT | MS_BIND | LOCKED_DOWN | MS_NOEXEC)


def set_limits(limits: dict, same_user: int) -> None:
    """The program's rlimits. RLIMIT_CPU's hard limit a second past the soft one: SIGXCPU first, then
    SIGKILL should the program ignore it. RLIMIT_NPROC counts the processes of the program's user in
    its namespace: `same_user` more where the sandbox's own run as that user. RLIMIT_CORE is 1 byte,
    not 0: the kernel treats 1 as "no core dump at all", also where core_pattern pipes dumps to a
    helper that runs on the host as root."""
    processes = limits["processes"] + same_user
    for limit, soft, hard in ((resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1),
                              (resource.RLIMIT_AS, limits["memory_bytes"], limits["memory_bytes"]),
                              (resource.RLIMIT_FSIZE, limits["file_bytes"], limits["file_bytes"]),
                              (resource.RLIMIT_NPROC, processes, processes),
                              (resource.RLIMIT_CORE, 1, 1)):
        resource.setrlimit(limit, (soft, hard))


def run_program(config: dict, exec_errors: int) -> None:
    """In the program's process: limits, no privileges, then exec. Never returns; a failure before
    the exec is written to `exec_errors` (closed by a successful exec), so that the program's own
    exit status never reads as the sandbox's."""
    try:
        root = os.getuid() == 0  # the harness runs as root: the program becomes PROGRAM_ID, nobody outside
        set_limits(config["limits"], same_user=0 if root else 2)  # else the keeper and the init are its user
        if root:
            os.setgroups([])
            os.setresgid(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID)
            os.setresuid(PROGRAM_ID, PROGRAM_ID, PROGRAM_ID)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl")
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(os.open("/dev/null", os.O_WRONLY), 1)  # output is not kept; stderr's last line is
        os.chdir(PROGRAM_FOLDER)
        python = config["python"]
        os.execve(python, [python, "-I", "program.py"], config["environment"])
    except BaseException as error:  # noqa: BLE001 (anything: this process must end here)
        os.write(exec_errors, f"starting the program: {error}".encode(errors="replace"))
        os._exit(SETUP_FAILED)


def verdict(status: int, cpu_seconds: float, limit: int) -> int:
    """The keeper's exit status for the program's wait status."""
    if os.WIFEXITED(status):
        return PASSED if os.WEXITSTATUS(status) == 0 else FAILED
    number = os.WTERMSIG(status)
    if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu_seconds >= limit):
        return CPU_TIME
    return SIGNALLED + number


def init(config: dict, keeper_alive: int) -> None:
    """PID 1 of the namespace. Never returns: its exit ends every process left in the namespace."""
    try:
        os._exit(init_and_wait(config, keeper_alive))
    except BaseException as error:  # noqa: BLE001 (anything: no verdict may come from a broken init)
        os.write(2, f"sandbox setup: {error}\n".encode(errors="replace"))
        os._exit(SETUP_FAILED)


def init_and_wait(config: dict, keeper_alive: int) -> int:
    """The init's work; the keeper's exit status for the program."""
    die_with_parent()
    if select.select([keeper_alive], [], [], 0)[0]:  # EOF: the keeper died before the line above
        return SETUP_FAILED
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    with open("/proc/sys/user/max_user_namespaces", "w") as limit:
        limit.write("0")  # a user namespace of its own would give the program capabilities again
    mount(None, "/proc", None, MS_REMOUNT | MS_BIND | LOCKED_DOWN | MS_NOEXEC)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # PID 1 ignores what it has no handler for
    exec_errors_read, exec_errors_write = os.pipe()  # both closed by the program's exec
    program = os.fork()
    if program == 0:
        run_program(config, exec_errors_write)
    os.close(exec_errors_write)
    exec_error = os.read(exec_errors_read, 4096)
    if exec_error:
        raise SetupError(exec_error.decode(errors="replace"))
    while True:  # reap orphans too, until the program itself ends
        pid, status, usage = os.wait4(-1, 0)
        if pid == program:
            return verdict(status, usage.ru_utime + usage.ru_stime, config["limits"]["cpu_seconds"])


def keeper(config: dict) -> int:
    """The first process: namespaces, mounts, then the init under the wall clock; its exit status."""
    die_with_parent()
    if os.getppid() != config["harness"]:  # the harness died before the line above
        return SETUP_FAILED
    unshare(NAMESPACES)
    os.write(1, UNSHARED)
    program = sys.stdin.buffer.read()  # the harness sends it once it has written the id maps
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    make_read_only()
    replace_dev()
    hide_and_keep(config["hidden"], config["kept"], FOLDER_FILES * config["limits"]["file_bytes"])
    with open(os.path.join(PROGRAM_FOLDER, "program.py"), "wb") as file:
        file.write(program)
    alive_read, alive_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(alive_write)
        init(config, alive_read)
    os.close(alive_read)
    timed_out = []

    def kill_init(*_):
        timed_out.append(True)
        os.kill(pid, signal.SIGKILL)

    signal.signal(signal.SIGALRM, kill_init)
    signal.setitimer(signal.ITIMER_REAL, config["limits"]["wall_seconds"])
    _, status = os.waitpid(pid, 0)  # returns once every process of the namespace has ended
    signal.setitimer(signal.ITIMER_REAL, 0)
    if timed_out:
        return WALL_CLOCK
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else SIGNALLED + os.WTERMSIG(status)


def main() -> None:
    try:
        code = keeper(json.loads(sys.argv[1]))
    except Exception as error:  # noqa: BLE001 (anything: no verdict may come from a broken keeper)
        os.write(2, f"sandbox setup: {error}\n".encode(errors="replace"))
        code = SETUP_FAILED
    os._exit(code)


if __name__ == "__main__":
    main()
