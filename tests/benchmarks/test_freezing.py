"""The freezing bench on the ci suite's flip-flop sets: every set timed and hashed, runs added under
their labels, the user's cache untouched, and the table says whether the runs froze the same files."""
from __future__ import annotations

import json
import os

from benchmarks.freezing import main, render_freezing


def test_two_runs_freeze_the_same_files_into_fresh_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "user_cache"))
    out = tmp_path / "results" / "bench" / "freezing_cpu.json"
    for label in ("before", "after", "before"):  # a label run again replaces its run
        main(["--suite", "ci", "--model", "zoo:flipflop_path", "--label", label, "--out", str(out)])
    runs = json.loads(out.read_text())["runs"]
    assert [run["label"] for run in runs] == ["after", "before"]
    assert [row["set"] for row in runs[0]["sets"]] == [
        "flipflop_in@512/s1234", "flipflop_sparse@512/s1234", "flipflop_dense@512/s1234"]
    assert runs[0]["files"] == 3 and runs[0]["files_sha256"] == runs[1]["files_sha256"]
    assert os.environ["PATH_EVAL_CACHE"] == str(tmp_path / "user_cache")
    assert not (tmp_path / "user_cache").exists()  # the bench froze into caches of its own
    text = render_freezing(tmp_path / "results")
    assert "| flipflop_sparse |" in text and "identical in every run" in text

    runs[0]["files_sha256"] = "0" * 64
    out.write_text(json.dumps({"runs": runs}))
    assert "**they differ between runs**" in render_freezing(tmp_path / "results")


def test_a_group_of_processes_freezes_the_files_one_process_freezes(tmp_path, monkeypatch):
    """The group mode's plumbing (members, their lines, the files' hash); whether processes share the
    work is tests/tasks/test_frozen_sharing.py's."""
    from benchmarks.freezing import render_freezing_processes

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "user_cache"))
    results = tmp_path / "results"
    alone, group = results / "bench" / "freezing_cpu.json", results / "bench" / "freezing_processes_cpu.json"
    main(["--suite", "ci", "--model", "zoo:flipflop_path", "--label", "alone", "--out", str(alone)])
    main(["--suite", "ci", "--model", "zoo:flipflop_path", "--processes", "2", "--label", "two", "--out", str(group)])
    run = json.loads(group.read_text())["runs"][0]
    assert run["processes"] == 2 and run["sets"] == 3 and len(run["process_s"]) == 2
    assert run["files"] == 3 and run["files_sha256"] == json.loads(alone.read_text())["runs"][0]["files_sha256"]
    assert not (tmp_path / "user_cache").exists()
    text = render_freezing_processes(results)
    assert "| two | 2 | 3 |" in text and "identical in every group" in text
