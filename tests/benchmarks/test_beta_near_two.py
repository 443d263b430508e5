"""The beta-near-2 accuracy bench on the CPU (Triton's interpreter, float16; the bench itself runs in
bf16 on the H200): its records, its refusals and its table."""
from __future__ import annotations

import json

import pytest

from benchmarks import beta_near_two


def test_records_errors_of_both_preparations_against_the_definition(tmp_path, capsys):
    out = tmp_path / "results" / "bench" / "beta_near_two_cpu.json"
    argv = ["--device", "cpu", "--dtype", "float16", "--lengths", "70", "--head-dims", "32", "--betas", "1.0,2.0",
            "--rows", "16", "--no-fla", "--out", str(out)]
    assert beta_near_two.main(argv) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["command"].startswith("TRITON_INTERPRET=1 python -m benchmarks.beta_near_two --device cpu")
    assert data["meta"]["bound"] == 3e-3 and data["meta"]["fla"] is False
    records = data["records"]
    assert {(r["w"], r["variant"], r["beta"]) for r in records} == {
        (w, v, b) for w in ("random", "correlated") for v in ("path", "path_fox") for b in (1.0, 2.0)}
    for r in records:
        # the output's own fp16 rounding is about 2^-12 of it; the kernels' errors sit above that floor
        assert 5e-5 < r["output_rounding"] < 5e-4
        assert r["output_rounding"] < r["ours"] < 3e-3 and r["output_rounding"] < r["ours_accurate"] < 3e-3
        assert r["ours_within_bound"] and r["ours_accurate_within_bound"] and "fla" not in r
    page = beta_near_two.render_beta_near_two(tmp_path / "results")
    assert "`results/bench/beta_near_two_cpu.json`" in page and "| 32 | 70 | correlated | path_fox |" in page
    assert "ours, accurate prep, beta 2" in page and "fla" not in page.split("\n\n")[1]


@pytest.mark.parametrize("argv, line", [
    (["--betas", "2.5"], "PaTH's beta lies in (0, 2]"),
    (["--w", "parallel"], "--w takes random, correlated"),
    (["--lengths", "4k"], "--lengths 4k: give comma-separated numbers"),
    (["--device", "cpu", "--dtype", "bfloat16"], "Triton's interpreter has no bfloat16"),
])
def test_bad_arguments_are_one_line(argv, line, tmp_path, capsys):
    assert beta_near_two.main([*argv, "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and line in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
