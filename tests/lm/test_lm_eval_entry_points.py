"""The `path` model through lm-eval's own entry points: its Python API by name, and its command
line through `eval.py lm-eval`."""
import subprocess
import sys

import pytest

from path_eval.models.random_checkpoint import random_model
from tests.helpers import ROOT, fixture_data


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("entry")
    random_model("path", "tiny", 0, num_hidden_layers=1).save_pretrained(root / "model")
    data = fixture_data(root / "data", "lambada_openai")
    task = root / "tasks" / "lambada_local.yaml"
    task.parent.mkdir()
    task.write_text(
        "task: lambada_local\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {data / 'EleutherAI/lambada_openai/default/test.jsonl'}\n"
        "output_type: loglikelihood\ntest_split: test\n"
        "doc_to_text: \"{{text.split(' ')[:-1]|join(' ')}}\"\ndoc_to_target: \"{{' '+text.split(' ')[-1]}}\"\n"
        "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n")
    return root


def test_simple_evaluate_by_name(setup):
    import lm_eval
    from lm_eval.tasks import TaskManager

    import path_eval.lm  # noqa: F401  registers "path"

    out = lm_eval.simple_evaluate(model="path", model_args=f"pretrained={setup / 'model'},max_length=512",
                                  tasks=["lambada_local"], limit=3, task_manager=TaskManager(include_path=str(setup / "tasks")))
    assert out["results"]["lambada_local"]["acc,none"] >= 0.0
    assert out["n-samples"]["lambada_local"]["effective"] == 3


def test_lm_eval_command_line_wrapper(setup):
    result = subprocess.run([sys.executable, "eval.py", "lm-eval", "run", "--model", "path", "--model_args",
                             f"pretrained={setup / 'model'},max_length=512", "--tasks", "lambada_local",
                             "--include_path", str(setup / "tasks"), "--limit", "2", "--device", "cpu"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lambada_local" in result.stdout and "acc" in result.stdout


def test_lm_eval_command_line_wrapper_loads_our_checkpoint_as_hf(setup):
    """lm-eval's own `hf` model on a `path_eval` checkpoint: the wrapper registers the model type with
    transformers' Auto classes (a plain `import path_eval.lm` no longer imports transformers' modeling)."""
    from path_eval.models.tokenizer import mistral_v1_directory

    result = subprocess.run([sys.executable, "eval.py", "lm-eval", "run", "--model", "hf", "--model_args",
                             f"pretrained={setup / 'model'},tokenizer={mistral_v1_directory()},max_length=512",
                             "--tasks", "lambada_local",
                             "--include_path", str(setup / "tasks"), "--limit", "2", "--device", "cpu"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lambada_local" in result.stdout and "acc" in result.stdout
