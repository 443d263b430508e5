"""Zoo models on the command line: `list` names them as `zoo:NAME` and shows which models and
lengths each ci task has; an unknown zoo name is one line with the choices."""
import subprocess
import sys

from tests.helpers import ROOT, run_cli


def test_list_shows_the_zoo_and_each_tasks_models():
    result = run_cli("list", "--models")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name, kind in (("rope", "llama"), ("fox", "forgetting_transformer"), ("path", "path_attn"),
                       ("path_fox", "path_attn path_fox"), ("flipflop_path", "path_attn")):
        assert f"model zoo:{name}: {kind}" in lines
    assert ("  task flipflop_sparse (flip-flop p_ignore 0.98; lengths 512; models flipflop_rope, flipflop_fox, "
            "flipflop_path, flipflop_path_fox): flipflop_error") in lines
    assert any(line.startswith("  task heldout (corpus zoo/heldout/jack_sheppard_tail.txt; lengths 1024, 2048, 4096")
               for line in lines)


def test_plain_list_needs_no_models_folder(tmp_path):
    """`list` alone, from a folder without models/, lists the suites and the zoo: only a --models
    folder the user names must exist."""
    result = subprocess.run([sys.executable, str(ROOT / "eval.py"), "list"], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("suite ci:") for line in lines) and "model zoo:path: path_attn" in lines


def test_an_unknown_zoo_model_is_one_line(tmp_path):
    result = run_cli("run", "--suite", "ci", "--model", "zoo:patth", "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: no zoo model 'patth': choose one of a5_rope, flipflop_fox, flipflop_path, flipflop_path_fox, "
        "flipflop_rope, fox, path, path_fox, rope (zoo:NAME), or zoo for all of them"]


def test_a_mistyped_model_fails_before_the_model_stack_imports():
    """A mistyped --model is checked before torch and transformers' modeling code are imported
    (about 7 s on a 2-core machine), so its one-line error comes at once."""
    code = ("import sys\nfrom path_eval.api import evaluate\nfrom path_eval.errors import PathEvalError\n"
            "try:\n    evaluate('ci', ['zoo:patth'])\nexcept PathEvalError as error:\n    print(error)\n"
            "print(sorted(m for m in ('torch', 'transformers.modeling_utils') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("no zoo model 'patth'")
    assert result.stdout.splitlines()[-1] == "[]"
