"""The CPU thread count a run chooses where the user sets none: from the cores allowed, a cgroup quota
and the processes on the host; set before torch sizes its pools; never over the user's setting."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from path_eval import cpu_threads
from path_eval.cpu_threads import ThreadChoice, cgroup_quota, choose_threads, configure_threads

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("cores, quota, processes, threads", [
    (2, None, 1, 2),  # nothing but the cores
    (16, 2.0, 1, 2),  # a container's quota of two cores on a large host
    (16, 2.5, 1, 2),  # a part-core is no thread
    (16, 0.5, 1, 1),  # under one core: still one thread
    (8, None, 4, 2),  # four data-parallel processes share the cores
    (2, None, 4, 1),  # more processes than cores: one thread each
    (4, 8.0, 1, 4),  # a quota above the cores allowed
])
def test_the_count_is_the_cores_allowed_within_the_quota_shared_by_the_processes(cores, quota, processes, threads):
    assert choose_threads(cores, quota, processes).threads == threads


@pytest.mark.parametrize("cores, machine_cores, busy, threads", [
    (2, 2, 0, 2),  # an idle machine
    (2, 2, 1, 1),  # one busy process beside the run on 2 cores
    (2, 2, 7, 1),  # more busy than cores: still one thread
    (8, 64, 60, 4),  # a large host's busy cores leave 4 idle, fewer than the 8 allowed here
    (8, 64, 10, 8),
])
def test_other_work_on_the_machine_takes_its_cores(cores, machine_cores, busy, threads):
    assert choose_threads(cores, None, 1, machine_cores, busy).threads == threads


@pytest.mark.parametrize("readings, busy", [(["1/200"] * 5, 0), (["3/200", "2/200", "3/200", "9/200", "3/200"], 2)])
def test_busy_cores_are_the_median_runnable_threads_but_this_one(tmp_path, monkeypatch, readings, busy):
    lines = iter(f"0.5 0.4 0.3 {r} 12345\n" for r in readings)
    monkeypatch.setattr(Path, "read_text", lambda self: next(lines))
    assert cpu_threads.busy_cores(tmp_path / "loadavg") == busy


def test_busy_cores_are_unknown_without_proc(tmp_path):
    assert cpu_threads.busy_cores(tmp_path / "absent") is None


def test_the_line_says_what_the_count_follows_from():
    assert choose_threads(2, 2.0, 1).line() == "CPU threads: 2 (2 cores allowed, cgroup quota 2.0)"
    assert choose_threads(8, None, 4).line() == "CPU threads: 2 (8 cores allowed, 4 processes on this host)"
    assert choose_threads(2, None, 1, 2, 1).line() == "CPU threads: 1 (2 cores allowed, 1 other threads running on the machine's 2 cores)"


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "200000 100000\n"}, 2.0),  # cgroup v2
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "150000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1.5),  # cgroup v1
    ({"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu.max": "garbage\n"}, None),
    ({}, None),  # no cgroup files at all (macOS, a bare chroot)
])
def test_the_cgroup_quota_is_read_from_v2_and_v1_files(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_quota(tmp_path) == quota


def test_a_users_variable_is_kept_and_named(monkeypatch):
    monkeypatch.setattr(cpu_threads, "_chosen", None)
    environ = {"OMP_NUM_THREADS": "3"}
    assert configure_threads(environ) == ThreadChoice("3", "OMP_NUM_THREADS set")
    assert environ == {"OMP_NUM_THREADS": "3"}


def test_the_chosen_count_is_set_where_the_user_set_none(monkeypatch):
    monkeypatch.setattr(cpu_threads, "_chosen", None)
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # as before any import of torch
    environ = {"LOCAL_WORLD_SIZE": "2"}
    monkeypatch.setattr(cpu_threads, "busy_cores", lambda: 0)  # an idle machine
    choice = configure_threads(environ)
    assert choice.threads == max(1, min(len(os.sched_getaffinity(0)), int(cgroup_quota() or 10**6)) // 2)
    assert environ["OMP_NUM_THREADS"] == str(choice.threads)


PROBE = """
import json, os
from path_eval.cli import parse_and_configure
parse_and_configure(["list"])
import torch
print(json.dumps([torch.get_num_threads(), os.environ["OMP_NUM_THREADS"]]))
"""


def probe(environ: dict) -> list:
    """torch's thread count and OMP_NUM_THREADS once the command line is configured."""
    env = {k: v for k, v in os.environ.items() if k not in cpu_threads.USER_VARIABLES} | environ
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_the_command_line_sizes_torchs_pools_before_torch_imports():
    """torch itself reports one thread for each of 64 processes on the host."""
    assert probe({"LOCAL_WORLD_SIZE": "64"}) == [1, "1"]


def test_the_command_line_keeps_the_users_thread_count():
    assert probe({"OMP_NUM_THREADS": "3", "LOCAL_WORLD_SIZE": "64"})[1] == "3"
