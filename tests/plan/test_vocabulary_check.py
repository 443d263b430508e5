"""A model whose vocabulary a flip-flop task cannot use is refused when the plan is made, from its
tokenizer files, before torch imports and before any model loads: the plan's reading of those files
(`token_id_lookup`) must give the rule the answer the tokenizer the evaluator loads gives it."""
import pytest

from path_eval.errors import PathEvalError
from path_eval.models.tokenizer import load_tokenizer, token_id_lookup
from path_eval.models.zoo import zoo_models, zoo_names
from path_eval.plan import resolve_plan
from path_eval.suites import load_suite
from path_eval.tasks.flipflop import SYMBOLS, check_vocabulary, uses_vocabulary
from tests.cli.test_early_checks import run_main


def flipflop_suite(folder, models: str = ""):
    """A suite of one flip-flop task, on the models `models` lists (a YAML list; empty: every model)."""
    (folder / "ff.yaml").write_text("name: ff\ndescription: x\ntasks:\n  - {name: ff, flipflop: {p_ignore: 0.8}, "
                                    "lengths: [64], samples: 2, metrics: [flipflop_error]"
                                    f"{', models: ' + models if models else ''}}}\n")
    return folder / "ff.yaml"


def test_a_flipflop_task_without_models_refuses_the_language_models_before_any_model_loads(tmp_path):
    """`--model zoo` lists the A5 and flip-flop models first: a check at run time came after they had
    run. The first model of the zoo without the vocabulary is named."""
    code, lines, imported = run_main(["run", "--suite", str(flipflop_suite(tmp_path)), "--model", "zoo",
                                      "--out", str(tmp_path / "out")])
    assert code == 2
    [line] = lines
    assert line.startswith("error: model a5_rope does not use the flip-flop vocabulary")
    assert "flip-flop task ff" in line and "models:" in line and "--model" in line
    assert "zoo:flipflop_fox, zoo:flipflop_path, zoo:flipflop_path_fox, zoo:flipflop_rope)" in line
    assert imported == [], f"{', '.join(imported)} imported before the error line: {line}"
    assert not (tmp_path / "out").exists()


def test_a_flipflop_task_that_names_its_models_runs_beside_the_language_models(tmp_path):
    """The check reads only the models the task runs on: the same suite with `models:` plans."""
    suite = load_suite(str(flipflop_suite(tmp_path, "[flipflop_rope]")))
    plan = resolve_plan(suite, ["zoo:rope", "zoo:flipflop_rope"], data_dir=tmp_path)
    assert [item.models for item in plan.items] == [["flipflop_rope"]]


def loaded_answer(tokenizer, model: str) -> bool:
    """Whether the evaluator's check passes on the loaded tokenizer."""
    try:
        check_vocabulary(tokenizer.convert_tokens_to_ids, model, "ff")
    except PathEvalError:
        return False
    return True


@pytest.mark.parametrize("name", [*zoo_names(), "mistral_v1"])
def test_the_plan_reads_the_ids_the_loaded_tokenizer_gives(tmp_path, name):
    """Every zoo model, and a checkpoint without tokenizer files (the Mistral v1 fallback): the ids of
    the symbols, and the rule's verdict, from the files as from the tokenizer the run loads."""
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    path = folder if name == "mistral_v1" else zoo_models(name)[0]
    tokenizer = load_tokenizer(path)
    token_id = token_id_lookup(path)
    assert [token_id(symbol) for symbol in SYMBOLS] == tokenizer.convert_tokens_to_ids(list(SYMBOLS))
    assert uses_vocabulary(token_id) == loaded_answer(tokenizer, name) == name.startswith("flipflop_")


def test_a_tokenizer_the_plan_cannot_read_is_left_to_the_loader(tmp_path):
    """A corrupt tokenizer.json, or a tokenizer of another form (vocab.json and merges): no answer,
    so the plan refuses nothing on it; the loader names what is wrong, the evaluator checks loaded."""
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "tokenizer.json").write_text("{")
    other_form = tmp_path / "other-form"
    other_form.mkdir()
    (other_form / "tokenizer_config.json").write_text("{}")
    (other_form / "vocab.json").write_text('{"w": 0}')
    assert token_id_lookup(corrupt) is None and token_id_lookup(other_form) is None
