"""A mistyped command is refused before the model stack imports: torch, transformers, lm-eval and
datasets take seconds to import idle (minutes on a loaded machine), so every check of the
arguments, the suite, the models named, the device and the data comes first. Each command runs in
a fresh process that reports, once `main` has returned, which of those libraries it imported: a
structural check, whatever the machine's load."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from path_eval.models.devices import has_gpu_device_files
from tests.helpers import ROOT

HEAVY = ("torch", "transformers", "lm_eval", "datasets")

# `main` in a fresh process, then the heavy libraries it imported, as the last line on stderr.
RUNNER = f"""
import sys
from path_eval.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:  # argparse's own errors
    code = stop.code
print("imported:", ",".join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""

RUN = ["run", "--model", "zoo:rope"]


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> dict[str, Path]:
    """Malformed suites, a model folder and a data folder that are not there: {NAME} in a case's arguments."""
    root = tmp_path_factory.mktemp("early-checks")
    suites = {"BROKEN_YAML": "name: x\ntasks: [\n", "UNKNOWN_KEY": (ROOT / "suites" / "ci.yaml").read_text() + "bogus: 1\n",
              "NOT_A_MAPPING": "- a\n- b\n", "NO_TASKS": "name: x\ndescription: y\n"}
    paths = {}
    for name, text in suites.items():
        paths[name] = root / f"{name.lower()}.yaml"
        paths[name].write_text(text)
    paths["A_FILE"] = root / "a-file"
    paths["A_FILE"].write_text("not a folder\n")
    paths["DANGLING"] = root / "dangling"
    paths["DANGLING"].symlink_to(root / "never-made")
    paths["NO_MODEL"] = root / "no-model"
    paths["NO_DATA"] = root / "no-data"
    return paths


CASES = [
    # tasks and lengths
    ([*RUN, "--suite", "ruler", "--tasks", "nosuch"], "no task 'nosuch'"),
    ([*RUN, "--suite", "ruler", "--tasks", "niah_single_1,nosuch"], "no task 'nosuch'"),
    ([*RUN, "--suite", "ruler", "--tasks", ","], "names nothing"),
    ([*RUN, "--suite", "ruler", "--lengths", "x"], "length 'x'"),
    ([*RUN, "--suite", "ruler", "--lengths", "4k,abc"], "length 'abc'"),
    ([*RUN, "--suite", "ruler", "--lengths", "1.5k"], "length '1.5k'"),
    ([*RUN, "--suite", "table2", "--lengths", "4k"], "drop --lengths"),
    ([*RUN, "--suite", "ruler", "--lengths", "8k", "--max-length", "1024"], "exceeds --max-length"),
    # suites: unknown, malformed, options they do not take
    ([*RUN, "--suite", "nosuch"], "unknown suite 'nosuch'"),
    ([*RUN, "--suite", "{BROKEN_YAML}"], "broken_yaml.yaml"),
    ([*RUN, "--suite", "{UNKNOWN_KEY}"], "bogus"),
    ([*RUN, "--suite", "{NOT_A_MAPPING}"], "not_a_mapping.yaml"),
    ([*RUN, "--suite", "{NO_TASKS}"], "no_tasks.yaml"),
    ([*RUN, "--suite", "ruler", "--longbench-rule", "bogus"], "LongBench rule 'bogus'"),
    # models
    (["run", "--suite", "ruler", "--model", "zoo:nosuch"], "no zoo model 'nosuch'"),
    (["run", "--suite", "ruler", "--model", "zoo:rope", "--model", "zoo:nosuch"], "no zoo model 'nosuch'"),
    (["run", "--suite", "ruler", "--model", "{NO_MODEL}"], "no-model"),
    (["inspect", "--model", "zoo:nosuch"], "no zoo model 'nosuch'"),
    (["generate", "--model", "zoo:nosuch", "--prompt", "a"], "no zoo model 'nosuch'"),
    # devices
    ([*RUN, "--suite", "ruler", "--device", "tpu"], "unknown device 'tpu'"),
    ([*RUN, "--suite", "ruler", "--device", "cuda:x"], "unknown device 'cuda:x'"),
    ([*RUN, "--suite", "ruler", "--device", "CPU"], "unknown device 'CPU'"),
    (["inspect", "--model", "zoo:rope", "--device", "gpu"], "unknown device 'gpu'"),
    # precisions and attention backends
    ([*RUN, "--suite", "ruler", "--dtype", "fp8"], "unknown dtype 'fp8'"),
    ([*RUN, "--suite", "ruler", "--dtype", "Float32"], "unknown dtype 'Float32'"),
    ([*RUN, "--suite", "ruler", "--attention", "bogus"], "unknown attention backend 'bogus'"),
    ([*RUN, "--suite", "ruler", "--attention", "triton"], "runs on a CUDA GPU"),
    (["inspect", "--model", "zoo:rope", "--dtype", "half"], "unknown dtype 'half'"),
    (["generate", "--model", "zoo:rope", "--prompt", "a", "--attention", "flash"], "unknown attention backend"),
    # data
    ([*RUN, "--suite", "ruler", "--tasks", "niah_single_2", "--data-dir", "{NO_DATA}"], "no Paul Graham essays"),
]

# A GPU asked of a machine without one (no GPU device file) is refused before torch imports too.
NO_GPU_CASES = [
    ([*RUN, "--suite", "ruler", "--device", "cuda"], "no CUDA GPU"),
    ([*RUN, "--suite", "ruler", "--device", "cuda:9"], "no CUDA GPU"),
    (["generate", "--model", "zoo:rope", "--prompt", "a", "--device", "cuda:1"], "no CUDA GPU"),
]


def run_main(args: list[str]) -> tuple[int, list[str], list[str]]:
    """Exit status, the command's stderr lines and the heavy libraries it imported (the Triton
    kernels as a user's machine runs them: on a GPU, not interpreted on the CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", RUNNER, *args], cwd=ROOT, capture_output=True, text=True, env=env)
    *lines, imported = result.stderr.strip().splitlines() or [""]
    assert imported.startswith("imported:"), result.stderr[-2000:]
    return result.returncode, lines, [m for m in imported.removeprefix("imported:").strip().split(",") if m]


@pytest.mark.parametrize("args, expected", [
    *CASES,
    *(pytest.param(*case, marks=pytest.mark.skipif(has_gpu_device_files(), reason="this machine has a GPU"))
      for case in NO_GPU_CASES),
], ids=lambda value: " ".join(value) if isinstance(value, list) else None)
def test_a_mistyped_command_is_refused_before_the_model_stack_imports(place, tmp_path, args, expected):
    args = [a.format(**{k: str(v) for k, v in place.items()}) for a in args]
    code, lines, imported = run_main([*args, *(["--out", str(tmp_path / "out")] if args[0] == "run" else [])])
    assert code == 2
    [line] = lines
    assert line.startswith("error: ") and expected in line
    assert imported == [], f"{', '.join(imported)} imported before the error line: {line}"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("out, expected", [("{A_FILE}", "is a file"), ("{A_FILE}/run", "not a folder the run can write in"),
                                           ("{DANGLING}", "which is not there: make that folder")])
def test_an_out_folder_the_run_cannot_write_in_is_refused_before_the_model_stack_imports(place, out, expected):
    code, lines, imported = run_main([*RUN, "--suite", "ruler", "--tasks", "niah_single_1", "--lengths", "1k",
                                      "--out", out.format(A_FILE=place["A_FILE"], DANGLING=place["DANGLING"])])
    assert code == 2
    [line] = lines
    assert line.startswith("error: --out ") and expected in line
    assert imported == [], f"{', '.join(imported)} imported before the error line: {line}"
    assert not (place["DANGLING"].parent / "never-made").exists()


def test_the_runner_sees_the_model_stack_when_it_is_imported():
    """The checks above can fail: a command that gets as far as the model stack reports it."""
    code, lines, imported = run_main(["inspect", "--model", "zoo:rope"])
    assert code == 0
    assert "torch" in imported
