"""The Figure 1 table: one row a length, each forward's ms and TFLOP/s in its own column."""
import json

import pytest

pytest.importorskip("triton")  # benchmarks.kernels imports triton.testing

from benchmarks.kernels import figure1_shape, figure1_table, render_figure1  # noqa: E402

HEADER = ["T", "SDPA cuDNN ms / TFLOP/s", "SDPA flash ms / TFLOP/s", "PaTH ours ms / TFLOP/s",
          "PaTH fla ms / TFLOP/s", "PaTH-FoX ours ms / TFLOP/s", "PaTH-FoX fla ms / TFLOP/s", "FoX ours ms / TFLOP/s",
          "FoX fla ms / TFLOP/s"]


def record(op, impl, T, ms, D=64):
    flops = 4 * 32 * 32 * T * T * D / 2
    return dict(op=op, impl=impl, B=32, H=32, T=T, D=D, dtype="bfloat16", ms=ms, fa_equiv_tflops=flops / ms / 1e9)


def cells(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]


def test_rows_by_length_and_cells_by_column():
    records = [record("path_fwd", "path-eval", 2048, 4.0), record("attn_fwd", "sdpa-flash", 1024, 0.5),
               record("fox_fwd", "fla", 1024, 1.0), record("path_fwd", "path-eval", 1024, 2.0),
               record("attn_fwd", "path-eval", 1024, 0.1), record("attn_fwd", "fla", 1024, 0.1)]  # no column
    header, _, *rows = cells(figure1_table(records))
    assert header == HEADER
    assert [row[0] for row in rows] == ["1K", "2K"]
    # 4 B H T^2 D / 2 at T = 1K is 137.4 GFLOP: 68.7 TFLOP/s in 2 ms
    assert rows[0] == ["1K", "-", "0.50 / 275", "2.00 / 69", "-", "-", "-", "-", "1.00 / 137"]
    assert rows[1] == ["2K", "-", "-", "4.00 / 137", "-", "-", "-", "-", "-"]


def test_only_figure1s_shape_reaches_the_table():
    records = [record("path_fwd", "path-eval", 1024, 2.0), record("path_fwd", "path-eval", 1024, 9.0, D=128),
               dict(record("path_fwd", "path-eval", 1024, 9.0), B=8)]
    assert figure1_shape(records) == records[:1]


def test_without_a_record_the_block_says_how_to_make_one(tmp_path):
    (tmp_path / "bench").mkdir()
    assert "gpu_session.sh figure1" in render_figure1(tmp_path)
    (tmp_path / "bench" / "figure1_h200.json").write_text(json.dumps({"machine": "NVIDIA H200", "records": []}))
    assert "gpu_session.sh figure1" in render_figure1(tmp_path)  # every forward failed: still no table
    (tmp_path / "bench" / "figure1_h100.json").write_text(json.dumps(
        {"machine": "NVIDIA H100", "records": [record("fox_fwd", "fla", 1024, 1.0),
                                                record("fox_fwd", "fla", 1024, 5.0, D=128)]}))
    rendered = render_figure1(tmp_path)
    assert "gpu_session.sh" not in rendered and "batch 32, 32 heads of 64" in rendered
    assert "1.00 / 137" in rendered and "5.00" not in rendered
