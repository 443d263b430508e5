"""docs/benchmarks.md and the schema block of docs/results.md are what the committed JSON gives."""
import json
import shutil
from pathlib import Path

from benchmarks import docs

ROOT = Path(__file__).resolve().parents[2]


def copy_of_repository(tmp_path: Path) -> Path:
    """The docs and results folders of this checkout, to change without touching it."""
    for name in ("docs", "results"):
        shutil.copytree(ROOT / name, tmp_path / name)
    return tmp_path


def test_committed_docs_equal_a_fresh_regeneration():
    assert docs.stale_docs(ROOT) == [], f"run {docs.REGENERATE}"


def test_a_changed_measurement_changes_the_doc_and_fails_the_check(tmp_path, capsys):
    root = copy_of_repository(tmp_path)
    assert docs.main(["--check", "--root", str(root)]) == 0
    parity = root / "results" / "fla_parity.json"
    data = json.loads(parity.read_text())
    data["records"][0]["fp32_ours_vs_fla"] = 0.0777
    parity.write_text(json.dumps(data))

    assert "| 7.8e-02 |" in docs.render_benchmarks(root / "results")
    assert docs.main(["--check", "--root", str(root)]) == 1
    assert "docs/benchmarks.md differs" in capsys.readouterr().out
    assert docs.main(["--root", str(root)]) == 0
    assert docs.main(["--check", "--root", str(root)]) == 0


def test_a_hand_edited_schema_block_fails_the_check(tmp_path, capsys):
    root = copy_of_repository(tmp_path)
    results_doc = root / "docs" / "results.md"
    text = results_doc.read_text()
    start = text.index(docs.SCHEMA_BEGIN)
    results_doc.write_text(text[:start] + text[start:].replace('"higher_is_better"', '"higher_is_worse"', 1))
    assert docs.main(["--check", "--root", str(root)]) == 1
    assert "docs/results.md differs" in capsys.readouterr().out


def test_the_schema_block_holds_every_record_field():
    text = (ROOT / "docs" / "results.md").read_text()
    block = text[text.index(docs.SCHEMA_BEGIN):text.index(docs.SCHEMA_END)]
    for field in docs.ResultRecord.model_fields:
        assert f'"{field}"' in block


def test_missing_schema_markers_are_one_line_naming_the_fix(tmp_path, capsys):
    root = copy_of_repository(tmp_path)
    (root / "docs" / "results.md").write_text("# Results\n")
    assert docs.main(["--root", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "schema markers" in err and "\n" not in err


def test_a_data_parallel_measurement_gets_its_section(tmp_path):
    def run(processes, wall, requests_s, identical=True):
        phases = {"load": 3.0, "samples": 4.0, "load_wait": 0.5, "requests": requests_s, "write": 0.2}
        return {"processes": processes, "command": "torchrun ...", "wall_s": wall, "phases": [phases] * processes,
                "run_wall_time_s": wall - 5, "requests_computed": 325, "tokens": 5_400_000,
                "speedup": round(100.0 / wall, 3), "records_identical": identical}

    assert docs.data_parallel(tmp_path) == ""  # no measurement, no section
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "data_parallel_h200.json").write_text(json.dumps({
        "command": "python -m benchmarks.data_parallel --processes 1,2", "runs": [run(1, 100.0, 90.0),
                                                                                     run(2, 52.0, 44.5, False)],
        "machine": {"gpus": ["NVIDIA H200", "NVIDIA H200"], "cpus": 32, "device": "cuda", "torch": "2.11",
                    "python": "3.12"}}))
    text = docs.data_parallel(tmp_path)
    assert "| 2 | 52.0 | 1.92x | 3.0 | 4.0 | 0.5 | 44.5 | 0.2 | 325 | 5,400,000 | NO |" in text
    assert "GPUs NVIDIA H200, NVIDIA H200" in text and "--processes 1,2" in text


def test_a_super_chunk_sweep_gets_its_table():
    def rec(op, T, size, ms, impl=None):
        return dict(op=op, impl=impl or ("path-eval" if size == 4 else f"path-eval S={size}"), B=65536 // T, H=16,
                    T=T, D=128, dtype="bfloat16", ms=ms, fa_equiv_tflops=None, super_chunks=size)

    plain = [dict(rec("path_fwd", 16384, 1, 30.0), impl="path-eval")]
    plain[0].pop("super_chunks")
    assert docs.coarse_walk(plain) is None  # no sweep, no section
    records = [rec("path_fwd", 16384, 1, 30.0), rec("path_fwd", 16384, 4, 20.0), rec("path_fwd", 16384, 8, 24.0),
               rec("path_fox_fwd", 16384, 1, 33.0), rec("path_fox_fwd", 16384, 4, 22.0),
               rec("path_prep", 16384, 1, 9.5, "path-eval"), rec("path_prep_coarse", 16384, 4, 12.25, "path-eval"),
               rec("path_fwd", 16384, 1, 25.0, "fla"), rec("attn_fwd", 16384, 1, 8.0, "sdpa-cudnn"),
               rec("attn_fwd", 16384, 1, 10.0, "sdpa-flash")]
    text = docs.coarse_walk(records)
    assert "| PaTH forward | 128 | 16K | 30.00 | 20.00 | 24.00 | 4 | 1.50x | 25.00 | 1.25x | 0.40x | 9.50 | 12.25 | - |" in text
    assert "| PaTH-FoX forward | 128 | 16K | 33.00 | 22.00 | - | 4 | 1.50x | - | - | 0.36x | 9.50 | 12.25 | - |" in text


def test_forward_autotune_table_ranks_configs_against_each_variants_fastest():
    records = [{"case": "a", "first_call_s": 3.0, "ms_by_config": {"w4": 2.0, "w8": 5.0}},
               {"case": "b", "first_call_s": 4.0, "ms_by_config": {"w4": 3.0, "w8": 1.5}},
               {"case": "c", "first_call_s": 1.0, "ms_by_config": {"w4": 1.0}}]
    rows = [line for line in docs.forward_autotune(records).splitlines() if line.startswith("| w")]
    assert rows == ["| w4 | 2.00 (1.00x) | 3.00 (2.00x) | 1.00 (1.00x) |",
                    "| w8 | 5.00 (2.50x) | 1.50 (1.00x) | - |"]


def test_a_cold_start_that_splits_its_cost_lists_the_compiles_slowest_first():
    plain = {"load_s": 1.6, "requests": 2, "first_call_s": 19.1, "second_call_s": 0.7, "compile_autotune_s": 18.4}
    assert docs.cold_start(plain) == ("Cold start, in a fresh process: our model loaded in 1.6 s, the warm-up call of "
                                      "2 requests took 19.1 s, then 0.7 s: compile and autotune 18.4 s.")
    split = {**plain, "revision": "a18b5e2", "machine_start": 3, "triton_compile_s": 2.5,
             "triton_compiles": {"_rms_norm": {"count": 1, "s": 0.5}, "_fwd": {"count": 4, "s": 2.0}},
             "launcher_builds": {"count": 2, "s": 0.9}}
    assert docs.cold_start(split) == (
        "Cold start (a18b5e2, machine start 3), in a fresh process: our model loaded in 1.6 s, the warm-up call of "
        "2 requests took 19.1 s, then 0.7 s: compile and autotune 18.4 s. Of it Triton compiled for 2.5 s (`_fwd` "
        "4x 2.00 s, `_rms_norm` 1x 0.50 s) and built 2 C launchers in 0.9 s.")
