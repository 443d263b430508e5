"""Test helper: the command line in a subprocess, and the one-line error a missing data file gives."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args):
    return subprocess.run([sys.executable, "eval.py", *args], cwd=ROOT, capture_output=True, text=True)


def assert_missing_data_line(suite: str, data: Path, missing: str, out: Path, *args):
    """A run whose data lacks `missing` stops before any model loads (the model folder is empty): exit 2,
    one line naming the file and the download command, no results."""
    (out.parent / "model").mkdir(exist_ok=True)
    result = run_cli("run", "--suite", suite, "--model", str(out.parent / "model"), "--data-dir", str(data),
                     "--out", str(out), *args)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: missing data file") and missing in line
    assert f"python eval.py download --suite {suite} --data-dir {data}" in line
    assert not (out / "results.json").exists()
