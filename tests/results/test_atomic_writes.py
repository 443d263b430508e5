"""Two processes writing one file at once (the data-parallel processes filling a fresh cache dir:
lm-eval's task index, the weight-hash memo) each get the whole file, never a missing staging file."""
import multiprocessing
import os

from path_eval.results import store


def test_another_process_writing_the_same_file_meanwhile_breaks_no_write(tmp_path, monkeypatch):
    target = tmp_path / "cache" / "index.json"
    first_pid, rename = os.getpid(), os.replace

    def rename_after_the_other_process_wrote(source, destination):
        if os.getpid() == first_pid:  # between this process's staging write and its rename
            other = multiprocessing.get_context("fork").Process(target=store.write_json_atomic,
                                                                args=({"from": "other"}, target))
            other.start()
            other.join()
            assert other.exitcode == 0
        rename(source, destination)

    monkeypatch.setattr(store.os, "replace", rename_after_the_other_process_wrote)
    store.write_json_atomic({"from": "first"}, target)
    assert target.read_text() == '{\n "from": "first"\n}\n'  # the later rename wins, whole
    assert [p.name for p in target.parent.iterdir()] == ["index.json"]  # no staging file left
