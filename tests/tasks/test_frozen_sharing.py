"""Processes that need the same frozen set at once make it once: the second waits for the first's
lock and reads what it wrote (a study's models run side by side on one tokenizer and would each
generate every set)."""
import json
import subprocess
import sys
import time

from tests.helpers import ROOT

KEY = {"task": "probe", "length": 16, "tokenizer_sha256": "t", "seed": 1, "samples": 2}

# One process freezing KEY: `generate` notes its name in the log and, for the first, waits for `go`.
FREEZER = """
import json, sys, time
from pathlib import Path
from path_eval.tasks.frozen import freeze, read_frozen
name, root, folder = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
def generate():
    with open(folder / "generated", "a") as log:
        log.write(name + "\\n")
    (folder / f"started_{name}").touch()
    deadline = time.monotonic() + 60
    while name == "first" and not (folder / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return [{"index": i, "by": name} for i in range(2)]
(folder / f"calling_{name}").touch()
path = freeze(json.loads(sys.argv[4]), generate, root)
print(json.dumps({"path": str(path), "rows": read_frozen(path)}))
"""


def start(name, tmp_path):
    return subprocess.Popen([sys.executable, "-c", FREEZER, name, str(tmp_path / "frozen"), str(tmp_path),
                             json.dumps(KEY)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path, seconds=60):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def test_a_set_two_processes_need_at_once_is_generated_once(tmp_path):
    first = start("first", tmp_path)
    wait_for(tmp_path / "started_first")  # the first is generating, its lock held
    second = start("second", tmp_path)
    wait_for(tmp_path / "calling_second")
    time.sleep(0.5)  # the second reaches the set while the first still makes it
    (tmp_path / "go").touch()
    outputs = []
    for process in (first, second):
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        outputs.append(json.loads(stdout))
    assert (tmp_path / "generated").read_text().split() == ["first"]
    assert outputs[0] == outputs[1] and {row["by"] for row in outputs[1]["rows"]} == {"first"}


def test_within_skipping_busy_a_set_being_made_elsewhere_raises_at_once(tmp_path):
    import pytest

    from path_eval.tasks import frozen

    samples, _ = frozen.frozen_paths(KEY, tmp_path)
    calls = []
    with frozen.generating(samples):  # another holder (a second descriptor: flock treats it apart)
        with frozen.skipping_busy(), pytest.raises(frozen.SetBusy):
            frozen.freeze(KEY, lambda: calls.append("generated") or [{"i": 0}], tmp_path)
    assert calls == [] and not samples.exists()
    frozen.freeze(KEY, lambda: calls.append("generated") or [{"i": 0}], tmp_path)  # outside: made as before
    assert calls == ["generated"]


def test_a_process_makes_the_free_sets_before_waiting_for_a_busy_one(tmp_path):
    """Three sets, the middle one being made by another holder that finishes only once the third is
    made: freezing them waits for the busy set at the end, so the holder is not waited on first
    (which, here, would never finish: the holder waits up to 20 s and says so)."""
    import threading

    from path_eval.evaluators import FrozenSet
    from path_eval.runner import processes
    from path_eval.tasks import frozen

    keys = {name: KEY | {"task": name} for name in ("a", "b", "c")}
    events, third_made, holding = [], threading.Event(), threading.Event()

    def make(name):
        def generate():
            events.append(name)
            if name == "c":
                third_made.set()
            return [{"by": name}]
        return lambda: frozen.freeze(keys[name], generate, tmp_path)

    def holder():
        def generate():
            holding.set()
            events.append("holder made b" if third_made.wait(20) else "holder timed out")
            return [{"by": "holder"}]
        frozen.freeze(keys["b"], generate, tmp_path)
    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(20)
    processes.freeze_on_cores([FrozenSet(3, make("a")), FrozenSet(2, make("b")), FrozenSet(1, make("c"))], cores=1)
    thread.join(30)
    assert events == ["a", "c", "holder made b"]  # b's own generate never ran: the holder's set was read
    assert frozen.read_frozen(frozen.frozen_paths(keys["b"], tmp_path)[0]) == [{"by": "holder"}]
