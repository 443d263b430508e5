"""One compute thread per test process, and per command line a test starts: on CI's two cores,
pytest's two workers with more threads each multiplied the CPU time itself (tests/conftest.py)."""
import subprocess
import sys

import torch

from tests.helpers import ROOT


def test_a_test_process_computes_on_one_thread():
    assert (torch.get_num_threads(), torch.get_num_interop_threads()) == (1, 1)


def test_a_command_line_a_test_starts_computes_on_one_thread():
    result = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "1"
