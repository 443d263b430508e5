"""The Figure 1 table: one row a length, each forward's ms and TFLOP/s in its own column."""
import pytest

pytest.importorskip("triton")  # benchmarks.kernels imports triton.testing

from benchmarks.kernels import FIGURE1_COLUMNS, figure1_table  # noqa: E402


def record(op, impl, T, ms):
    flops = 4 * 32 * 32 * T * T * 64 / 2
    return dict(op=op, impl=impl, B=32, H=32, T=T, D=64, dtype="bfloat16", ms=ms, fa_equiv_tflops=flops / ms / 1e9)


def test_rows_by_length_and_cells_by_column():
    records = [record("path_fwd", "path-eval", 2048, 4.0), record("attn_fwd", "sdpa-flash", 1024, 0.5),
               record("fox_fwd", "fla", 1024, 1.0), record("path_fwd", "path-eval", 1024, 2.0)]
    lines = figure1_table(records).splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[0] == "T" and len(header) == 1 + len(FIGURE1_COLUMNS)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    assert [row[0] for row in rows] == ["1K", "2K"]
    column = {(op, impl): 1 + i for i, (op, impl, _) in enumerate(FIGURE1_COLUMNS)}
    # 4 B H T^2 D / 2 at T = 1K is 137.4 GFLOP: 68.7 TFLOP/s in 2 ms
    assert rows[0][column[("path_fwd", "path-eval")]] == "2.00 / 69"
    assert rows[1][column[("path_fwd", "path-eval")]] == "4.00 / 137"
    assert rows[0][column[("attn_fwd", "sdpa-flash")]] == "0.50 / 275"
    assert rows[0][column[("fox_fwd", "fla")]] == "1.00 / 137"
    assert rows[1][column[("fox_fwd", "fla")]] == "-"


def test_without_a_record_the_block_says_how_to_make_one(tmp_path):
    from benchmarks.kernels import render_figure1

    (tmp_path / "bench").mkdir()
    assert "gpu_session.sh figure1" in render_figure1(tmp_path)
    (tmp_path / "bench" / "figure1_h100.json").write_text(
        '{"machine": "NVIDIA H100", "records": [{"op": "fox_fwd", "impl": "fla", "B": 32, "H": 32, "T": 1024, '
        '"D": 64, "dtype": "bfloat16", "ms": 1.0, "fa_equiv_tflops": 137.4}]}')
    rendered = render_figure1(tmp_path)
    assert "gpu_session.sh" not in rendered and "batch 32, 32 heads of 64" in rendered and "1.00 / 137" in rendered
