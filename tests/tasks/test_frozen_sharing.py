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
