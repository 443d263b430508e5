"""benchmarks/cli_start.py times what the import-weight test proves light: its invocations run as
written (exit codes as expected) and its table marks a slow or a wrongly-exiting one."""
import json

from benchmarks import cli_start


def test_invocations_cover_list_every_help_and_every_refusal():
    timed = cli_start.invocations()
    assert ("list", ["list"], 0) in timed
    for command in ("run", "report", "check", "compare", "download", "list", "generate"):
        assert ("help", [command, "--help"], 0) in timed
    assert ("help", ["--help"], 0) in timed
    assert not any(arguments[0] == "lm-eval" for _, arguments, _ in timed)  # its help is lm-eval's
    refusals = [(arguments, code) for kind, arguments, code in timed if kind == "refusal"]
    assert len(refusals) >= 15 and all(code == 2 for _, code in refusals)
    assert (["report", "/no/such/run"], 2) in refusals


def test_one_invocation_is_timed_with_its_exit_code():
    record = cli_start.measure(["run", "--suite", "no_such_suite", "--model", "zoo"], repeats=2)
    assert record["exit_codes"] == [2]
    assert 0 < record["median_s"] <= record["slowest_s"]


def test_the_table_marks_slow_and_wrongly_exiting_invocations(tmp_path):
    records = [{"kind": "list", "arguments": ["list"], "expected_exit": 0, "median_s": 0.4, "slowest_s": 0.5,
                "exit_codes": [0]},
               {"kind": "help", "arguments": ["run", "--help"], "expected_exit": 0, "median_s": 0.9,
                "slowest_s": 1.2, "exit_codes": [0]},
               {"kind": "refusal", "arguments": ["report", "/no/such run"], "expected_exit": 2, "median_s": 0.3,
                "slowest_s": 0.3, "exit_codes": [1]}]
    meta = {"command": "python -m benchmarks.cli_start --out X", "machine": "CPU (x86_64, 2 cores)",
            "python": "3.11.7", "repeats": 5, "target_s": 1.0}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "cli_start_cpu.json").write_text(json.dumps({"meta": meta, "records": records}))
    text = cli_start.render_cli_start(tmp_path)
    assert "| `eval.py list` | 0 | 0.40 | 0.50 | yes |" in text
    assert "| `eval.py run --help` | 0 | 0.90 | 1.20 | no |" in text
    assert "| `eval.py report '/no/such run'` | 1 | 0.30 | 0.30 | no |" in text
    assert "1 of 3 invocations under 1 s" in text and "slowest median: 0.90 s (`eval.py run --help`)" in text
