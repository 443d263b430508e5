"""Ctrl-C and SIGTERM at any moment stop cleanly (exit 130 / 143, one line, no traceback: while torch
imports, while the model loads, mid-run, and a second Ctrl-C a moment after the first), a mid-run
stop says what is saved, and the same command then finishes with exactly an uninterrupted run's records, no
sample lost or duplicated, the provenance totalling both segments. A run folder whose resume cache
holds pickles (a poisoned row) is refused without running its code."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from path_eval.results import load_records
from tests.helpers import ROOT, finished_requests, fixture_data, save_tiny_model

LIMIT, CHOICES = 10, 4  # HellaSwag: 40 loglikelihood requests


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("interrupts")
    model = save_tiny_model(root / "model")
    data = fixture_data(root / "data", "hellaswag")

    def command(out: Path) -> list[str]:
        return [sys.executable, "eval.py", "run", "--suite", "table2", "--tasks", "hellaswag", "--model", str(model),
                "--data-dir", str(data), "--limit", str(LIMIT), "--out", str(out), "--quiet"]

    fresh = subprocess.run(command(root / "fresh"), cwd=ROOT, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    return command, load_records(root / "fresh")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_stops_cleanly_and_resumes(setup, tmp_path, signum):
    command, fresh = setup
    out = tmp_path / "out"
    process = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while finished_requests(out) < 8 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    saved = finished_requests(out)
    assert 8 <= saved < LIMIT * CHOICES, "the run was not caught mid-way"
    assert process.returncode == 128 + signum
    assert "Traceback" not in stderr
    [line] = [x for x in stderr.splitlines() if x.startswith("error:")]
    assert line == (f"error: interrupted by {signal.Signals(signum).name}: {saved} finished requests, batches and blocks are saved in "
                    f"{out}; the same command resumes there")
    assert not (out / "results.json").exists() and not list(out.rglob("*.partial"))

    resumed = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    records = load_records(out)
    assert [(r.task, r.metric, r.value, r.stderr, r.n) for r in records] == \
        [(r.task, r.metric, r.value, r.stderr, r.n) for r in fresh]
    lines = (out / "samples" / "model" / "hellaswag.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["doc_id"] for x in lines) == list(range(LIMIT))  # none lost, none twice
    # lm-eval's layout: one results file, one samples file, every document once, the records' numbers
    [results_file] = (out / "lm_eval" / "model").glob("results_*.json")
    [samples_file] = (out / "lm_eval" / "model").glob("samples_hellaswag_*.jsonl")
    assert sorted(json.loads(x)["doc_id"] for x in samples_file.read_text().splitlines()) == list(range(LIMIT))
    lm_eval_results = json.loads(results_file.read_text())["results"]["hellaswag"]
    assert [lm_eval_results[f"{r.metric},none"] for r in records] == [r.value for r in records]
    # batch size 1: each segment's counters are exactly its committed requests' work
    assert records[0].provenance.requests_computed == LIMIT * CHOICES == fresh[0].provenance.requests_computed
    assert records[0].provenance.tokens == fresh[0].provenance.tokens


# When to interrupt: seconds after the start (while the modules, torch first, import; while the model
# loads), or MID_RUN, once a few requests are committed. Mid-run is an event, not a time: a run's
# length follows the machine's load, and a signal after its results are written rightly exits 0.
MID_RUN = "mid-run"
MOMENTS = [0.5, 1, 2, MID_RUN]


def wait_for_moment(process: subprocess.Popen, out: Path, moment) -> None:
    if moment == MID_RUN:
        deadline = time.time() + 240
        while finished_requests(out) < 4 and process.poll() is None and time.time() < deadline:
            time.sleep(0.02)
    else:
        time.sleep(moment)


@pytest.mark.slow
@pytest.mark.parametrize("signum, moment, repeat", [
    *((signal.SIGINT, moment, 1) for moment in MOMENTS),
    *((signal.SIGTERM, moment, 1) for moment in (1, MID_RUN)),
    *((signal.SIGINT, moment, 2) for moment in (1, MID_RUN)),  # Ctrl-C twice, 20 ms apart
], ids=lambda value: getattr(value, "name", str(value)))
def test_an_interrupt_at_any_moment_is_one_line(setup, tmp_path, signum, moment, repeat):
    command, _ = setup
    out = tmp_path / "out"
    process = subprocess.Popen(command(out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_moment(process, out, moment)
    assert process.poll() is None, "the run ended before the interrupt: nothing was tested"
    for _ in range(repeat):
        process.send_signal(signum)
        time.sleep(0.02)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, stderr[-2000:]
    [line] = stderr.strip().splitlines()
    assert line.startswith(f"error: interrupted by {signal.Signals(signum).name}")
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_poisoned_resume_cache_is_refused_without_running_it(setup, tmp_path):
    """lm-eval's pickled SqliteDict in place of the run's cache: the same command refuses it, and the
    pickle's payload (a shell command) never runs."""
    from sqlitedict import SqliteDict

    command, _ = setup
    out = tmp_path / "out"
    first = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    [cache] = (out / "resume").glob("*.db")
    cache.unlink()
    marker = tmp_path / "code-ran"
    with SqliteDict(str(cache), autocommit=True) as poisoned:
        poisoned["row"] = Payload(marker)
    assert not marker.exists()
    again = subprocess.run(command(out), cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 2
    [line] = [x for x in again.stderr.splitlines() if x.startswith("error:")]
    assert f"resume cache {cache} holds pickled rows" in line and "delete it" in line
    assert "Traceback" not in again.stderr and not marker.exists()


class Payload:
    """Unpickling this runs `touch MARKER`."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_a_process_forked_during_a_command_gets_the_default_handlers_back():
    """lm-eval's bootstrap pool is forked while `main` has SIGINT and SIGTERM raise `Interrupted`;
    `Pool.terminate` stops its workers with SIGTERM, so they must die of it, not raise (a worker that
    raised inside the pool's shared queue lock once left the parent joining it forever)."""
    import multiprocessing

    from path_eval import cli

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    cli._replaced_handlers.update({signum: signal.signal(signum, cli._interrupt) for signum in before})
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            in_child = {signum: pool.apply(signal.getsignal, (signum,)) for signum in before}
    finally:
        cli._restore_replaced_handlers()
        cli._replaced_handlers.clear()
    assert in_child == before and signal.getsignal(signal.SIGTERM) == before[signal.SIGTERM]


SWALLOWED = """
import sys, time
from path_eval import cli
{hook}
class Dropped:
    def __del__(self):  # Python prints an exception raised here and goes on, as in an import lock's callback
        raise cli.Interrupted(2)
Dropped()
time.sleep(0.5)
print("went on")
"""


@pytest.mark.parametrize("hooked", [True, False])
def test_an_interrupt_python_would_drop_still_ends_the_run_in_one_line(hooked):
    hook = "sys.unraisablehook = cli._exit_on_swallowed_interrupt" if hooked else ""
    done = subprocess.run([sys.executable, "-c", SWALLOWED.format(hook=hook)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    if hooked:
        assert (done.returncode, done.stderr, done.stdout) == (130, "error: interrupted by SIGINT\n", "")
    else:  # what the hook is for: the interrupt is printed as ignored and the run goes on
        assert done.returncode == 0 and "went on" in done.stdout and "Exception ignored" in done.stderr


def test_an_interrupt_inside_a_class_body_being_created_is_still_one_line(monkeypatch, capsys):
    """Python 3.11 wraps an exception raised in `__set_name__` (a signal landing while datasets'
    dataclasses are created during an import) in a RuntimeError: still the interrupt's one line."""
    import argparse

    from path_eval import cli

    class Descriptor:
        def __set_name__(self, owner, name):
            raise cli.Interrupted(signal.SIGTERM)

    def command(args):
        class Created:
            field = Descriptor()

    monkeypatch.setattr(cli, "parse_and_configure", lambda argv: argparse.Namespace(func=command, out=None))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    hook = sys.unraisablehook
    try:
        assert cli.main([]) == 128 + signal.SIGTERM
    finally:  # main leaves an interrupted process deaf to further signals; this one is pytest's
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        sys.unraisablehook = hook
    assert capsys.readouterr().err.strip().splitlines() == ["error: interrupted by SIGTERM"]
