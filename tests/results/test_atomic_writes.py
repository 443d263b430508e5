"""Two processes writing one file at once (the data-parallel processes filling a fresh cache dir:
lm-eval's task index, the weight-hash memo, frozen sample sets) each get the whole file, never a
missing staging file: every writer stages through `path_eval.atomic_files`."""
import multiprocessing
import os

import pytest

from path_eval import atomic_files
from path_eval.atomic_files import write_json_atomic, write_jsonl_atomic

WRITERS = {"json": (write_json_atomic, lambda who: {"from": who}, '{\n "from": "first"\n}\n'),
           "jsonl": (write_jsonl_atomic, lambda who: [{"from": who}], '{"from": "first"}\n')}


@pytest.mark.parametrize("kind", WRITERS)
def test_another_process_writing_the_same_file_meanwhile_breaks_no_write(tmp_path, monkeypatch, kind):
    write, payload, expected = WRITERS[kind]
    target = tmp_path / "cache" / f"index.{kind}"
    first_pid, rename = os.getpid(), os.replace

    def rename_after_the_other_process_wrote(source, destination):
        if os.getpid() == first_pid:  # between this process's staging write and its rename
            other = multiprocessing.get_context("fork").Process(target=write, args=(payload("other"), target))
            other.start()
            other.join()
            assert other.exitcode == 0
        rename(source, destination)

    monkeypatch.setattr(atomic_files.os, "replace", rename_after_the_other_process_wrote)
    write(payload("first"), target)
    assert target.read_text() == expected  # the later rename wins, whole
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no staging file left
