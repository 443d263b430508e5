"""The command line answers at once where it needs no model: `list`, every command's --help and every
refusal of bad arguments import none of torch, transformers, lm-eval, datasets or triton (seconds of
imports on a small CPU, which the first second of a command has no use for). Read from Python's own
`-X importtime` report of each command, so an import made anywhere on the way (a module's top, a
function called early) counts, not only the modules the test thinks of. The invocations are those
benchmarks/cli_start.py times."""
import subprocess
import sys

import pytest

from benchmarks.cli_start import REFUSALS, help_commands
from tests.helpers import ROOT

HEAVY = ("torch", "transformers", "lm_eval", "datasets", "triton")


def heavy_imports(*arguments: str) -> tuple[int, str, list[str]]:
    """(exit code, stderr without the import report, the heavy packages imported) of one command."""
    out = subprocess.run([sys.executable, "-X", "importtime", "eval.py", *arguments], cwd=ROOT,
                         capture_output=True, text=True)
    report = [line for line in out.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[1].strip() for line in report}
    assert report, "-X importtime reported nothing: the probe would prove nothing"
    rest = "\n".join(line for line in out.stderr.splitlines() if not line.startswith("import time:"))
    return out.returncode, rest, sorted(imported & set(HEAVY))


def test_the_report_sees_a_heavy_import():
    """The probe has teeth: a command that loads lm-eval shows it."""
    code, _, heavy = heavy_imports("lm-eval", "--help")
    assert code == 0 and "lm_eval" in heavy


def test_list_imports_nothing_heavy():
    code, errors, heavy = heavy_imports("list")
    assert code == 0, errors
    assert heavy == []


@pytest.mark.parametrize("command", help_commands())
def test_help_imports_nothing_heavy(command):
    code, errors, heavy = heavy_imports(*([command] if command else []), "--help")
    assert code == 0, errors
    assert heavy == []


@pytest.mark.parametrize("arguments", REFUSALS, ids=lambda a: " ".join(a))
def test_a_refusal_imports_nothing_heavy(arguments):
    code, errors, heavy = heavy_imports(*arguments)
    assert code == 2, errors
    lines = [line for line in errors.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), errors
    assert heavy == []
