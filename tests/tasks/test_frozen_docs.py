"""Generated tasks hand lm-eval their frozen samples through `frozen_splits` (lm-eval's
`custom_dataset`), not through `datasets`' json builder: the docs must be what that builder makes of
the same file, value for value and key for key, since lm-eval logs them and hashes them per sample."""
import json
import logging

import datasets
import pytest

from path_eval.models.identity import tokenizer_sha256
from path_eval.suites import load_suite
from path_eval.tasks.generated import build_generated_task, frozen_splits
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER
from tests.helpers import fixture_data


def builder_rows(file) -> tuple[list[dict], list[str]]:
    """The rows and field names `datasets.load_dataset("json")` gives for `file` (lm-eval's way)."""
    split = datasets.load_dataset("json", data_files={"test": str(file)}, cache_dir=str(file.parent / "hf"))["test"]
    return list(split), list(split.features)


def assert_same_docs(docs, rows, fields):
    assert docs == rows
    assert [list(doc) for doc in docs] == [list(row) for row in rows]  # key order: the sample logs' JSON
    assert list(docs.features) == fields


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return fixture_data(tmp_path_factory.mktemp("data"), "ruler_qa_1", ESSAYS_FOLDER)


@pytest.mark.parametrize("suite, task, length", [
    ("ruler", "niah_multikey_2", 2048), ("ruler", "niah_multivalue", 2048), ("ruler", "vt", 2048),
    ("ruler", "cwe", 2048), ("ruler", "fwe", 2048), ("ruler", "qa_1", 4096), ("phonebook", "phonebook", 1024)])
def test_generated_docs_equal_the_json_builders(tokenizer, data_dir, tmp_path, suite, task, length):
    built = build_generated_task(load_suite(suite).task(task), length, 5, tokenizer, tokenizer_sha256(tokenizer), 3,
                                 data_dir, suite, frozen_root=tmp_path)
    assert built.config["custom_dataset"] is frozen_splits
    docs = built.config["custom_dataset"](**built.config["metadata"], **built.config["dataset_kwargs"])["test"]
    assert len(docs) == 3
    assert_same_docs(docs, *builder_rows(built.files[0]))


def test_rows_with_every_json_type_and_line_separators_inside_strings(tmp_path):
    """Strings holding the breaks `str.splitlines` splits at (U+2028, form feed, a lone CR) stay whole,
    as JSON writes them unescaped; nested values, nulls, floats and non-ASCII text pass unchanged."""
    rows = [{"input": "a\u2028b\u2029c\x0cd\re\x85f", "outputs": ["x", "y"], "length": 2048, "score": 0.25,
             "extra": None, "nested": {"k": [1, 2]}, "flag": True, "text": "ünïcödé"},
            {"input": "second", "outputs": [], "length": 4096, "score": 1.5, "extra": None, "nested": {"k": []},
             "flag": False, "text": ""}]
    file = tmp_path / "set.jsonl"
    file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    docs = frozen_splits({"test": str(file)})["test"]
    assert docs == rows
    assert_same_docs(docs, *builder_rows(file))


def test_lm_evals_custom_dataset_warning_is_not_shown(tokenizer, data_dir, tmp_path, caplog):
    """lm-eval warns on every task with a custom_dataset, before it calls it, that its --metadata
    option takes custom arguments: advice for its own command line, 50 lines a model in a suite run.
    The first task lm-eval builds from a generated config logs it no more than the others."""
    from lm_eval.api.task import ConfigurableTask

    from path_eval.tasks import generated

    task_logger = logging.getLogger("lm_eval.api.task")
    for quiet in [f for f in task_logger.filters if isinstance(f, generated._CustomDatasetWarning)]:
        task_logger.removeFilter(quiet)  # as in a fresh process
    generated.quiet_custom_dataset_warning.cache_clear()
    built = build_generated_task(load_suite("phonebook").task("phonebook"), 1024, 5, tokenizer,
                                 tokenizer_sha256(tokenizer), 2, data_dir, "phonebook", frozen_root=tmp_path)
    with caplog.at_level(logging.WARNING, logger="lm_eval.api.task"):
        task = ConfigurableTask(config=built.config)
        task_logger.warning("another warning")
    assert len(task.eval_docs) == 2
    assert [r.getMessage() for r in caplog.records if r.name == "lm_eval.api.task"] == ["another warning"]
