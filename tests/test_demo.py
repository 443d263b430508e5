"""`python eval.py` with no arguments: a real offline evaluation of four variants at two lengths."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_default_demo_runs_offline(tmp_path):
    env = dict(os.environ, PATH_EVAL_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, str(ROOT / "eval.py")], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    records = json.loads((tmp_path / "runs" / "demo" / "results.json").read_text())
    overall = {(r["model"], r["length"]) for r in records if r["bucket"] is None}
    assert overall == {(v, n) for v in ("rope", "fox", "path", "path_fox") for n in (512, 2048)}
    assert "untrained models" in result.stdout and (tmp_path / "runs" / "demo" / "perplexity_by_position.png").is_file()
