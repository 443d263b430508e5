"""The CPU thread count of a run where the user sets none. torch's default, a thread per core of the
machine, ignores the cores this process may use (taskset, a container's cpuset), a container's CPU
quota, the other processes of a data-parallel run on the same host and other work keeping the
machine's cores busy; on a 2-core machine shared with other work, a run took 276 s with it against
44 s with one thread. The count is chosen from those four and set in OMP_NUM_THREADS, which torch reads once, when it first imports: so before
any import of torch, and never over a variable or a torch setting the user made."""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

# The variables through which a user sets torch's CPU threads; any of them set is the user's choice.
USER_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
CGROUP = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class ThreadChoice:
    threads: int | str  # a user's variable as given
    why: str  # what the count follows from, for the info line
    chosen_here: bool = False  # the harness chose it (a user's setting, or torch's, is theirs to know)

    def line(self) -> str:
        return f"CPU threads: {self.threads} ({self.why})"


def allowed_cores() -> int:
    """The cores this process may run on (its affinity mask: taskset, a cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows: no affinity masks
        return os.cpu_count() or 1


def within_quota(cores: int, quota: float | None) -> int:
    """`cores`, at most the quota rounded down (a thread or process beyond it waits for the quota's
    next period), at least 1."""
    return min(cores, max(1, math.floor(quota))) if quota is not None else cores


def usable_cores() -> int:
    """The cores this process may run on, at most its cgroup's quota: how many worker processes
    can run at once without waiting for each other's share."""
    return within_quota(allowed_cores(), cgroup_quota())


def cgroup_quota(root: Path = CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in cores (cgroup v2's cpu.max, v1's cpu.cfs_quota_us
    over cpu.cfs_period_us), or None without one."""
    def read(path: Path) -> list[str] | None:
        try:
            return path.read_text().split()
        except (OSError, UnicodeDecodeError):
            return None

    v2 = read(root / "cpu.max")  # "max 100000" (no quota) or "200000 100000"
    if v2 is not None:
        return _quota(*v2[:2]) if len(v2) >= 2 and v2[0] != "max" else None
    for folder in (root / "cpu", root / "cpu,cpuacct"):
        quota, period = read(folder / "cpu.cfs_quota_us"), read(folder / "cpu.cfs_period_us")
        if quota and period:
            return _quota(quota[0], period[0])  # a quota of -1: none
    return None


def _quota(quota: str, period: str) -> float | None:
    try:
        cores = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return cores if cores > 0 else None


def busy_cores(loadavg: Path = Path("/proc/loadavg"), samples: int = 5) -> int | None:
    """The machine's runnable threads other than this one, now: the median over a few readings of
    /proc/loadavg's running count (its 4th field, `running/total`, counts this thread too), or None
    where there is no such file. Instant, unlike the load averages, which trail by a minute."""
    counts = []
    for sample in range(samples):
        try:
            counts.append(int(loadavg.read_text().split()[3].split("/")[0]))
        except (OSError, ValueError, IndexError):
            return None
        if sample + 1 < samples:
            time.sleep(0.01)
    return max(0, sorted(counts)[len(counts) // 2] - 1)


def processes_on_host(environ=os.environ) -> int:
    """The data-parallel processes of this run on this host (torchrun's and accelerate's
    LOCAL_WORLD_SIZE), which share its cores."""
    try:
        return max(1, int(environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def choose_threads(cores: int, quota: float | None, processes: int, machine_cores: int | None = None,
                   busy: int | None = None) -> ThreadChoice:
    """The cores allowed, at most the quota (rounded down: a thread beyond it waits for the quota's
    next period), at most the machine's cores that other work leaves idle, shared by the host's
    processes; at least 1. torch's threads wait for each other at every operation, so one thread
    sharing its core with other work holds all of them up: on 2 cores beside one busy process, two
    threads ran far slower than one."""
    usable = within_quota(cores, quota)
    why = [f"{cores} cores allowed"]
    if quota is not None:
        why.append(f"cgroup quota {quota:.1f}")
    if busy and machine_cores:
        usable = min(usable, max(1, machine_cores - busy))
        why.append(f"{busy} other threads running on the machine's {machine_cores} cores")
    threads = max(1, usable // processes)
    if processes > 1:
        why.append(f"{processes} processes on this host")
    return ThreadChoice(threads, ", ".join(why))


_chosen: ThreadChoice | None = None


def configure_threads(environ=os.environ) -> ThreadChoice:
    """Set OMP_NUM_THREADS to the chosen count where the user set no thread count and torch is not
    imported yet (its pools exist then, sized by the user's program); the choice made, or the
    user's. The first call decides: later calls return its choice."""
    global _chosen
    if _chosen is not None:
        return _chosen
    given = next((name for name in USER_VARIABLES if environ.get(name)), None)
    if given is not None:
        _chosen = ThreadChoice(environ[given], f"{given} set")
    elif "torch" in sys.modules:
        _chosen = ThreadChoice(sys.modules["torch"].get_num_threads(), "torch's own: it was imported before path-eval")
    else:
        _chosen = replace(choose_threads(allowed_cores(), cgroup_quota(), processes_on_host(environ), os.cpu_count(),
                                         busy_cores()), chosen_here=True)
        environ["OMP_NUM_THREADS"] = str(_chosen.threads)
    return _chosen

