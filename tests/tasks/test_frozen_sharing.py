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
    import threading

    from path_eval.tasks import frozen

    samples, _ = frozen.frozen_paths(KEY, tmp_path)
    calls, outcome = [], {}

    def attempt():  # in a thread of its own: a broken skip would wait on the lock, not fail
        with frozen.skipping_busy():
            try:
                frozen.freeze(KEY, lambda: calls.append("generated") or [{"i": 0}], tmp_path)
                outcome["made"] = True
            except frozen.SetBusy:
                outcome["busy"] = True
    with frozen.generating(samples):  # another holder (a second descriptor: flock treats it apart)
        thread = threading.Thread(target=attempt, daemon=True)
        thread.start()
        thread.join(10)
        assert outcome == {"busy": True} and calls == [] and not samples.exists()
    frozen.freeze(KEY, lambda: calls.append("generated") or [{"i": 0}], tmp_path)  # outside: made as before
    assert calls == ["generated"]


def freeze_probe(root: str, log: str, name: str) -> None:
    """A set named `name` frozen under `root`, its generation noted in `log` (picklable: a pool's
    workers run it)."""
    from pathlib import Path

    from path_eval.tasks import frozen

    def generate():
        with open(log, "a") as handle:
            handle.write(name + "\n")
        return [{"by": name}]
    frozen.freeze(KEY | {"task": name}, generate, Path(root))


def hold_while_making(root, log, name, others, made_by_holder):
    """Another holder making set `name`, finishing only once the sets `others` exist (or after 20 s,
    saying so in `log`): a process that waits for it before making them would wait the 20 s."""
    from path_eval.tasks import frozen

    def generate():
        made_by_holder.set()
        deadline = time.monotonic() + 20
        while not all(frozen.valid_frozen(KEY | {"task": o}, *frozen.frozen_paths(KEY | {"task": o}, root))
                      for o in others):
            if time.monotonic() > deadline:
                with open(log, "a") as handle:
                    handle.write("holder timed out\n")
                break
            time.sleep(0.02)
        with open(log, "a") as handle:
            handle.write(f"holder made {name}\n")
        return [{"by": "holder"}]
    frozen.freeze(KEY | {"task": name}, generate, root)


def freeze_around_busy_sets(tmp_path, cores, sizes: dict[str, int], busy: tuple[str, ...]):
    """Freeze the sets `sizes` (name: tokens) while other holders make the `busy` ones, each holder
    finishing only once every set not busy exists: whether the busy sets were there when freezing
    returned, the generation log, and each busy set's rows."""
    import threading
    from functools import partial

    from path_eval.evaluators import FrozenSet
    from path_eval.runner import processes
    from path_eval.tasks import frozen

    log, free = tmp_path / "log", tuple(name for name in sizes if name not in busy)
    holders = []
    for name in busy:
        holding = threading.Event()
        holders.append(threading.Thread(target=hold_while_making, args=(tmp_path, log, name, free, holding)))
        holders[-1].start()
        assert holding.wait(20)
    processes.freeze_on_cores([FrozenSet(tokens, partial(freeze_probe, str(tmp_path), str(log), name))
                               for name, tokens in sizes.items()], cores=cores)
    keys = [KEY | {"task": name} for name in busy]
    made_when_returned = all(frozen.valid_frozen(key, *frozen.frozen_paths(key, tmp_path)) for key in keys)
    for holder in holders:
        holder.join(30)
    rows = [frozen.read_frozen(frozen.frozen_paths(key, tmp_path)[0]) for key in keys]
    return made_when_returned, log.read_text().split("\n")[:-1], rows


def test_a_process_makes_the_free_sets_before_waiting_for_a_busy_one(tmp_path):
    """Three sets, the middle one being made by another holder that finishes only once the other two
    exist: freezing them passes over the busy set and waits for it at the end (waiting for it first
    would wait out the holder's 20 s), and returns only once the holder's set is there."""
    made_when_returned, log, rows = freeze_around_busy_sets(tmp_path, 1, {"a": 3, "b": 2, "c": 1}, ("b",))
    assert made_when_returned and log == ["a", "c", "holder made b"] and rows == [[{"by": "holder"}]]


def test_pool_workers_pass_over_busy_sets_too(tmp_path, monkeypatch):
    """Two workers, four sets, the second and third (by size) busy: workers that waited at a busy set
    would both wait, and the last free set would never be made before the holders' 20 s."""
    from path_eval.runner import processes

    monkeypatch.setattr(processes, "POOL_MIN_TOKENS", 0)  # tiny sets, in the pool all the same
    made_when_returned, log, rows = freeze_around_busy_sets(tmp_path, 3, {"a": 4, "b": 3, "d": 2, "c": 1},
                                                            ("b", "d"))
    assert made_when_returned and sorted(log[:2]) == ["a", "c"]
    assert sorted(log[2:]) == ["holder made b", "holder made d"]
    assert rows == [[{"by": "holder"}], [{"by": "holder"}]]  # the busy sets' own generate never ran
