"""Today's results, kept: `eval.py run` of every suite on the committed fixtures (tests/fixtures/data)
with tiny seeded models must give the golden records in tests/runner/golden/ (how they were made and
how to remake them: tests/runner/golden/README.md).

Counts, keys, n, seeds, protocol fields, data fingerprints and scores counted from samples must be
equal; perplexities, stderrs and seed spreads agree to a relative 1e-6 (make_golden.FLOAT_REL_TOLERANCE:
a float32 kernel summing in another order moves the last bits, float32's epsilon being 1.2e-7). The models
are made from seeds and their numbers depend on torch's kernels: torch is pinned (2.13.0 in CI), and a
torch upgrade that changes them means rewriting the goldens in a commit of its own.

The runs take about 20 s on one thread, all in one process (lm-eval's task index read once, from
the cache the tests run with)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.golden.make_golden import RUNS, compare, read_golden

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    rows = tmp_path_factory.mktemp("golden") / "rows.json"
    result = subprocess.run([sys.executable, "-m", "tests.runner.golden.make_golden", "--rows-out", str(rows)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(rows.read_text())


@pytest.mark.parametrize("suite", list(RUNS))
def test_results_equal_the_golden_records(found, suite):
    problems = compare(found[suite], read_golden(suite))
    assert not problems, "\n".join(problems)
