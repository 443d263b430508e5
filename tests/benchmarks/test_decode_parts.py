"""The decode-parts bench: one line, no JSON, where no CUDA GPU is; its table from a record."""
from __future__ import annotations

import json

import pytest
import torch

from benchmarks import decode_parts


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without a CUDA GPU")
def test_without_a_gpu_it_says_so_in_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "decode_parts.json"
    assert decode_parts.main(["--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert not out.exists()


def test_the_table_has_a_row_per_length_and_a_column_per_part(tmp_path):
    row = {key: float(i) for i, (key, _) in enumerate(decode_parts.COLUMNS)}
    record = {"meta": {"machine": "NVIDIA H100", "model": "zoo:path", "batch": 32, "repeats": 5, "replays": 120,
                       "new_tokens": 128},
              "lengths": [{"prompt_tokens": 1024, **row}, {"prompt_tokens": 16256, **row}]}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "decode_parts_h100.json").write_text(json.dumps(record))
    lines = decode_parts.render_decode_parts(tmp_path).splitlines()
    assert "`results/bench/decode_parts_h100.json`" in lines[0] and "medians of 5" in lines[0]
    header, _, first, second = lines[2:]
    assert header.count("|") == len(decode_parts.COLUMNS) + 2
    assert first.startswith("| 1K | 0.00 | 1.00 |") and second.startswith("| 16256 |")
