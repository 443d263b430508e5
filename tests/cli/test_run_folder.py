"""A run folder knows whose it is and who is writing it: `run --out` and `rescore --out` refuse a
folder that holds another run or files no run makes, a second process is refused while the first
holds the folder (a lock the kernel drops when its holder dies, however it dies), nothing is renamed
over a path that is not a regular file, and a run whose folder is removed, or whose writes the
file-size limit stops, ends in one line. Real `eval.py run` processes on the tests' tiny model; a
refusal is exit 2, one `error:` line naming the fix, and changes nothing in the folder."""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from path_eval import run_folder
from path_eval.atomic_files import check_target, write_atomic
from path_eval.errors import PathEvalError
from path_eval.results import load_records
from tests.cli.test_bad_inputs import _main, assert_one_error_line
from tests.helpers import ROOT, finished_requests, fixture_data, save_tiny_model

LIMIT = 20  # the fixture's 20 HellaSwag rows, 4 requests each


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("run-folder")
    return save_tiny_model(root / "model"), fixture_data(root / "data", "hellaswag")


def command(inputs, out: Path, limit: int = LIMIT) -> list[str]:
    model, data = inputs
    return ["run", "--suite", "table2", "--tasks", "hellaswag", "--model", str(model), "--data-dir", str(data),
            "--limit", str(limit), "--batch-size", "2", "--out", str(out), "--quiet"]


def started(inputs, out: Path, limit: int = LIMIT, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "eval.py", *command(inputs, out, limit)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **options)


def wait_until(condition, process: subprocess.Popen) -> None:
    deadline = time.time() + 240
    while not condition() and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert condition(), f"the run never got there: {process.poll()}"


def contents(folder: Path) -> dict[Path, bytes | None]:
    return {p: (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def refused(capsys, argv: list[str], fragment: str) -> str:
    assert _main(argv) == 2
    return assert_one_error_line(capsys.readouterr().err, fragment)


@pytest.fixture(scope="module")
def finished(inputs, tmp_path_factory):
    """A finished run, and its folder's files."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert _main(command(inputs, out)) == 0
    return out


def test_a_finished_run_leaves_no_lock_file(finished):
    assert run_folder.plan_file(finished).is_file() and not run_folder.lock_file(finished).exists()


def test_the_same_run_again_resumes_in_its_folder(inputs, finished, capsys):
    numbers = lambda: [(r.task, r.metric, r.value, r.stderr, r.n) for r in load_records(finished)]  # noqa: E731
    before = numbers()
    assert _main(command(inputs, finished)) == 0
    assert f"resumed: {LIMIT * 4} of {LIMIT * 4} requests and batches reused" in capsys.readouterr().err
    assert numbers() == before


@pytest.mark.parametrize("case", ["another plan", "a user's results.json", "another tool's file",
                                  "a plan.json that is no plan", "a rescore's folder", "a results.json FIFO",
                                  "a plan.json FIFO"])
def test_a_folder_that_is_not_this_runs_is_refused_and_left_as_it_is(case, inputs, finished, tmp_path, capsys):
    out = tmp_path / "out"
    if case == "another plan":  # the same suite and model on fewer samples: results.json would be replaced
        shutil.copytree(finished, out)
        fragment, argv = "holds another run (suite table2, model, 1 item, limit 20", command(inputs, out, limit=3)
    else:
        out.mkdir()
        argv = command(inputs, out)
        if case == "a user's results.json":
            (out / "results.json").write_text(json.dumps({"results": {"hellaswag": {"acc": 0.9}}}))
            fragment = "holds a results.json without the plan.json a run writes first"
        elif case == "another tool's file":
            (out / "notes.md").write_text("mine")
            (out / "plan.json.bak").write_text("mine")
            fragment = "holds files that are not a path-eval run's (notes.md, plan.json.bak)"
        elif case == "a results.json FIFO":
            os.mkfifo(out / "results.json")
            fragment = "holds a results.json without the plan.json"
        elif case == "a plan.json FIFO":  # no run's plan to compare: refused as the run writes its plan
            os.mkfifo(out / "plan.json")
            fragment = "plan.json is a FIFO (named pipe), not a regular file"
        elif case == "a plan.json that is no plan":
            (out / "plan.json").write_text(json.dumps({"items": []}))
            fragment = "plan.json is not a path-eval plan"
        else:  # results.json and suite.json as `rescore` leaves them
            for name in ("results.json", "suite.json"):
                shutil.copy(finished / name, out / name)
            fragment = "holds a results.json without the plan.json"
    before = contents(out)
    line = refused(capsys, argv, fragment)
    assert str(out) in line
    assert contents(out) == before, "a refused run changed the folder"


def test_rescore_into_a_folder_of_another_tools_results_is_refused(finished, tmp_path):
    """rescore reads its run first: the folder's refusal is checked on a run it can score
    (tests/cli/test_fresh_battery.py holds the refusal of another run's folder)."""
    from path_eval.results.ownership import claim_for_rescore

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(PathEvalError, match="holds a results.json that path-eval did not write"):
        claim_for_rescore(out, tmp_path / "run")
    (out / "results.json").write_text("[]")  # records path-eval wrote (none): a rescore's own
    claim_for_rescore(out, tmp_path / "run")
    shutil.copy(finished / "plan.json", out / "plan.json")
    with pytest.raises(PathEvalError, match="is the folder of another run"):
        claim_for_rescore(out, tmp_path / "run")
    claim_for_rescore(out, out)  # the run itself, rescored in place


def test_a_second_run_into_a_folder_in_use_is_refused(inputs, tmp_path):
    """The first run holds the folder (stopped while it runs, so the second certainly meets it at
    work); the same command in a second process is refused, and the first completes with all its
    samples once it goes on."""
    out = tmp_path / "out"
    first = started(inputs, out)
    try:
        wait_until(lambda: finished_requests(out) >= 4, first)
        first.send_signal(signal.SIGSTOP)
        second = subprocess.run([sys.executable, "eval.py", *command(inputs, out)], cwd=ROOT, capture_output=True,
                                text=True)
    finally:
        first.send_signal(signal.SIGCONT)
    assert second.returncode == 2
    line = assert_one_error_line(second.stderr, f"--out {out} is in use by another path-eval process (pid "
                                                f"{first.pid})")
    assert "another --out" in line
    assert first.wait() == 0, first.stderr.read()[-2000:]
    lines = run_folder.sample_log(out, "model", "hellaswag").read_text().splitlines()
    assert sorted(json.loads(x)["doc_id"] for x in lines) == list(range(LIMIT))
    assert load_records(out)[0].n == LIMIT


def test_two_runs_started_together_into_one_folder_one_is_refused(inputs, tmp_path):
    """Two different runs started at once: whichever comes second is refused (the folder in use, or
    another run's once the first is done), the other completes and keeps its results."""
    out = tmp_path / "out"
    runs = {limit: started(inputs, out, limit) for limit in (LIMIT, 12)}
    codes = {limit: process.wait() for limit, process in runs.items()}
    assert sorted(codes.values()) == [0, 2], {limit: runs[limit].stderr.read() for limit in runs}
    [winner] = [limit for limit, code in codes.items() if code == 0]
    [loser] = [limit for limit, code in codes.items() if code == 2]
    line = assert_one_error_line(runs[loser].stderr.read(), f"--out {out}")
    assert "in use by another path-eval process" in line or "holds another run" in line
    assert {r.n for r in load_records(out)} == {winner}


def test_a_killed_runs_folder_is_not_left_locked(inputs, tmp_path):
    out = tmp_path / "out"
    process = started(inputs, out)
    wait_until(lambda: finished_requests(out) >= 1, process)
    with pytest.raises(PathEvalError, match="is in use by another path-eval process"):
        with run_folder.locked(out):
            pass
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert run_folder.lock_file(out).read_text().strip() == str(process.pid)  # left behind, but not held:
    with run_folder.locked(out):  # the kernel let go of the killed process's lock
        assert run_folder.lock_file(out).read_text().strip() == str(os.getpid())
    assert not run_folder.lock_file(out).exists()  # a process that lets go removes it


@pytest.mark.parametrize("change", ["removed", "replaced"])
def test_a_run_whose_folder_is_removed_ends_in_one_line(change, inputs, tmp_path):
    """`rm -rf` of the folder mid-run (sqlite then says "readonly database"), or the folder moved away
    and a new one made in its place (the run's files still open in the old one): one line, and no
    results.json in the new folder."""
    out = tmp_path / "out"
    process = started(inputs, out)
    wait_until(lambda: finished_requests(out) >= 4, process)
    process.send_signal(signal.SIGSTOP)
    if change == "removed":
        shutil.rmtree(out)
    else:
        out.rename(tmp_path / "moved")
        out.mkdir()
    process.send_signal(signal.SIGCONT)
    assert process.wait() == 2
    line = assert_one_error_line(process.stderr.read(), "removed")
    assert "during the run" in line and "start the run again" in line
    assert not run_folder.results_file(out).exists()


def test_the_file_size_limit_ends_a_run_in_one_line_and_what_it_saved_resumes(inputs, tmp_path, capsys):
    """`ulimit -f` at 24 KiB: sqlite's "disk I/O error" once the resume cache reaches it. The requests
    committed before stay, and the same command without the limit reuses them."""
    out = tmp_path / "out"
    limit = 24 * 1024
    process = started(inputs, out, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert process.wait() == 2
    line = assert_one_error_line(process.stderr.read(), "cannot be written (disk I/O error)")
    assert "ulimit -f" in line and "run the same command again" in line
    saved = finished_requests(out)
    assert 0 < saved < LIMIT * 4
    assert _main(command(inputs, out)) == 0
    assert f"resumed: {saved} of {LIMIT * 4} requests and batches reused" in capsys.readouterr().err
    assert load_records(out)[0].n == LIMIT


def test_an_efbig_write_is_one_line_naming_the_limit():
    import errno

    from path_eval.cli import os_error_line

    line = os_error_line(OSError(errno.EFBIG, "File too large", "/x/results.json"))
    assert "file-size limit (ulimit -f)" in line and "/x/results.json" in line


def special_files(folder: Path) -> dict[str, Path]:
    fifo, sock = folder / "fifo", folder / "socket"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()
    return {"a FIFO (named pipe)": fifo, "a socket": sock, "a device": Path("/dev/null")}


def test_nothing_is_renamed_over_a_path_that_is_not_a_regular_file(tmp_path):
    for what, path in special_files(tmp_path).items():
        mode = path.lstat().st_mode
        with pytest.raises(PathEvalError, match=re.escape(f"is {what}, not a regular file")):
            write_atomic("page", path)
        assert path.lstat().st_mode == mode
    link = tmp_path / "link"
    (tmp_path / "regular").write_text("mine")
    link.symlink_to(tmp_path / "regular")
    with pytest.raises(PathEvalError, match="is a symbolic link"):  # never written through, even to a file
        write_atomic("page", link)
    assert (tmp_path / "regular").read_text() == "mine"
    write_atomic("page", tmp_path / "regular")  # a regular file is replaced, a new path made
    write_atomic("page", tmp_path / "new")
    check_target(tmp_path / "regular" / "x.json")  # under a file: nothing there to refuse, and the write's
    with pytest.raises(OSError):                    # own OSError (its folder cannot be made) is the caller's
        write_atomic("page", tmp_path / "regular" / "x.json")
    assert (tmp_path / "regular").read_text() == (tmp_path / "new").read_text() == "page"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_report_html_refuses_a_target_that_is_not_a_regular_file(finished, tmp_path, capsys):
    for what, path in special_files(tmp_path).items():
        refused(capsys, ["report", str(finished), "--html", str(path)], f"{path} is {what}, not a regular file")
    assert Path("/dev/null").is_char_device()
