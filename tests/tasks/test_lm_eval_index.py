"""lm-eval's task index, kept in the cache dir: the map names the YAML files lm-eval's own full index
names, is read back instead of rebuilt, and is rebuilt when it is unreadable or points at files that
are gone."""
import json
from types import SimpleNamespace

import pytest

from path_eval.tasks import lm_eval_tasks
from tests.helpers import full_task_manager


@pytest.fixture
def fresh_index(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path))
    lm_eval_tasks.task_yaml_paths.cache_clear()
    yield tmp_path / "lm_eval_index"
    lm_eval_tasks.task_yaml_paths.cache_clear()


def fake_manager(paths, built):
    """A stand-in for lm-eval's TaskManager whose index holds `paths`, counting its builds."""
    def make():
        built.append(1)
        return SimpleNamespace(task_index={name: SimpleNamespace(yaml_path=p) for name, p in paths.items()})
    return make


def test_the_map_is_read_back_and_rebuilt_when_stale(fresh_index, tmp_path, monkeypatch):
    import lm_eval.tasks

    yaml = tmp_path / "piqa.yaml"
    yaml.write_text("task: piqa\n")
    built = []
    monkeypatch.setattr(lm_eval.tasks, "TaskManager", fake_manager({"piqa": yaml, "a_group": None}, built))
    assert lm_eval_tasks.task_yaml_paths() == {"piqa": str(yaml)} and built == [1]  # groups have no YAML
    lm_eval_tasks.task_yaml_paths.cache_clear()
    assert lm_eval_tasks.task_yaml_paths() == {"piqa": str(yaml)} and built == [1]  # read back, not rebuilt
    for stale in ("{", json.dumps({"piqa": str(tmp_path / "gone.yaml")})):
        next(fresh_index.glob("*.json")).write_text(stale)
        lm_eval_tasks.task_yaml_paths.cache_clear()
        assert lm_eval_tasks.task_yaml_paths() == {"piqa": str(yaml)}
    assert built == [1, 1, 1]


@pytest.mark.parametrize("name", ["piqa", "hellaswag", "wikitext", "lambada_openai", "longbench_gov_report_e"])
def test_the_map_names_the_files_of_lm_evals_own_index(name):
    assert lm_eval_tasks.task_yaml_paths()[name] == str(full_task_manager().task_index[name].yaml_path)


def test_configs_of_our_own_alone_read_no_index(monkeypatch):
    """A run of generated tasks only (RULER, PhoneBook) never pays for lm-eval's index, which a fresh
    cache spends seconds building; a config made from an lm-eval task reads it."""
    read = []
    monkeypatch.setattr(lm_eval_tasks, "task_yaml_paths", lambda: read.append(1) or {"piqa": "/tasks/piqa/piqa.yaml"})
    monkeypatch.setattr(lm_eval_tasks, "task_manager", lambda folders: folders)
    assert lm_eval_tasks.task_manager_for([None, None]) == () and read == []
    assert lm_eval_tasks.task_manager_for(["piqa", None]) == ("/tasks/piqa",) and read == [1]
