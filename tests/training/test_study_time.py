"""The study's time table: each part's phases and each model's own calls, from the committed files."""
import json
import lzma
import shutil
from pathlib import Path

from training.study import render_study_time

ROOT = Path(__file__).resolve().parents[2]


def rows(table: str) -> list[list[str]]:
    lines = [line for line in table.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_a_parts_row_holds_its_phases_and_its_models_calls(tmp_path):
    results = tmp_path / "results"
    part = results / "zoo" / "study" / "gpu" / "fox"
    shutil.copytree(ROOT / "results" / "zoo" / "study" / "gpu" / "fox", part)
    (results / "zoo" / "study" / "index.json").write_text(json.dumps(
        {"gpu": {"parts": {"fox": "results/zoo/study/gpu/fox"}}}))
    timings = {"processes": [{"start": 1.0, "tokenizer": 0.1, "load": 0.2, "samples": 12.34, "load_wait": 0.0,
                              "requests": 56.78, "write": 0.1}], "spans": [[]]}
    (part / "timings.json").write_text(json.dumps(timings))
    records = json.loads(lzma.decompress((part / "results.json.xz").read_bytes()))
    records = records["records"] if isinstance(records, dict) else records
    info = records[0]["provenance"]
    [row] = rows(render_study_time(results))
    assert row[:4] == ["fox", "12.3", "56.8", "fox"]
    assert row[4] == f"{info['tokens'] / 1e6:.1f}M"
    assert row[5] == f"{info['tokens'] / info['tokens_per_second']:.1f}"
    assert row[7] == f"the harness's ({info['attention_backend']})"
