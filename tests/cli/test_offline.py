"""A run is offline by construction: with no HF_*_OFFLINE variable set, a whole run under a socket
guard (every connection attempt and name lookup recorded and refused) makes none, and leaves
nothing in Hugging Face's datasets cache under the user's home."""
import os
import subprocess
import sys

from tests.helpers import ROOT, fixture_data, save_tiny_model

# Records and refuses every connection attempt, then runs the command line; a library that catches
# the refusal and carries on is still caught by the record.
GUARD = """
import socket, sys
record = sys.argv.pop(1)
def refuse(*args, **kwargs):
    with open(record, "a") as handle:
        handle.write(repr(args[:2]) + "\\n")
    raise OSError("network use in an offline run")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.getaddrinfo = socket.create_connection = refuse
from path_eval.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_makes_no_connection_and_no_stray_datasets_cache(tmp_path):
    model = save_tiny_model(tmp_path / "model")
    data = fixture_data(tmp_path / "data", "piqa", "hellaswag")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("HF_") or k in ("TRANSFORMERS_OFFLINE", "PATH_EVAL_CACHE", "XDG_CACHE_HOME"))}
    env |= {"HOME": str(home), "PYTHONPATH": str(ROOT)}
    record = tmp_path / "connections"
    run = subprocess.run([sys.executable, "-c", GUARD, str(record), "run", "--suite", "table2", "--tasks",
                          "piqa,hellaswag", "--model", str(model), "--data-dir", str(data), "--limit", "2",
                          "--out", str(tmp_path / "out"), "--quiet"], cwd=ROOT, env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not record.exists(), record.read_text()
    assert (tmp_path / "out" / "results.json").is_file()
    assert not (home / ".cache" / "huggingface" / "datasets").exists()
