"""Zoo models on the command line: `list` names them as `zoo:NAME` and shows which models and
lengths each ci task has; an unknown zoo name is one line with the choices."""
from tests.helpers import run_cli


def test_list_shows_the_zoo_and_each_tasks_models():
    result = run_cli("list", "--models")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name, kind in (("rope", "llama"), ("fox", "forgetting_transformer"), ("path", "path_attn"),
                       ("path_fox", "path_attn path_fox"), ("flipflop_path", "path_attn")):
        assert f"model zoo:{name}: {kind}" in lines
    assert ("  task flipflop_sparse (flip-flop p_ignore 0.98; lengths 512; models flipflop_rope, flipflop_fox, "
            "flipflop_path, flipflop_path_fox): flipflop_error") in lines
    assert any(line.startswith("  task heldout (corpus zoo/heldout/jack_sheppard_tail.txt; lengths 512, 2048, 4096")
               for line in lines)


def test_an_unknown_zoo_model_is_one_line(tmp_path):
    result = run_cli("run", "--suite", "ci", "--model", "zoo:patth", "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: no zoo model 'patth': choose one of flipflop_fox, flipflop_path, flipflop_path_fox, flipflop_rope, "
        "fox, path, path_fox, rope (zoo:NAME), or zoo for all of them"]
