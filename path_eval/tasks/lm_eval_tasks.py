"""Tasks that lm-eval defines: its own YAML config and functions (Table 2: unchanged; a task with an
`adapter`: rewritten where lm-eval departs from the original benchmark), with the dataset pointed at
the local data dir (`dataset_path: json` + `data_files`). Only the splits the evaluation reads are
mapped; the others are switched off so nothing reaches for the hub."""
from __future__ import annotations

from typing import TYPE_CHECKING

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from path_eval.atomic_files import write_json_atomic
from path_eval.data import DatasetSplit, require
from path_eval.errors import PathEvalError
from path_eval.locations import cache_dir
from path_eval.tasks import babilong, babilong_regenerated, longbench

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import SuiteSpec, TaskSpec

SPLIT_KEYS = ("training_split", "validation_split", "test_split", "fewshot_split")
# Task adapters (TaskSpec.adapter): lm-eval config, task, suite -> the config to evaluate.
ADAPTERS = {"longbench": longbench.adapt_config, "babilong": babilong.adapt_config}
# In a suite's `data.hf_config`: the run's length in units of 1024 tokens, for datasets with one config
# per context length (BABILong's "0k", "4k", ...: hf_config "{length_k}k").
LENGTH_K = "{length_k}"
# The dataset name regenerated BABILong rows go by (never a hub id: they are not the hub's rows).
REGENERATED = "regenerated/babilong"


def no_target(doc: dict) -> str:
    """The empty target of a task whose metrics read the doc's own answers (RULER, PhoneBook,
    TheoremQA): a function, since lm-eval renders a string target through a Jinja template compiled
    anew for every doc (twice a doc: together with the prompts as lists, about 2 s of each later model
    of the zoo study on a 2-core CPU, `benchmarks.host_cost`)."""
    return ""


@lru_cache(maxsize=1)
def task_yaml_paths() -> dict[str, str]:
    """lm-eval's task names -> their YAML files. lm-eval's full index reads some 14,000 task YAMLs
    (about 9 s on this project's CI machine, in every process), so the map is kept in the cache dir
    (`task_index_file`)."""
    file = task_index_file(cache_dir())
    try:
        paths = json.loads(file.read_text())
        if isinstance(paths, dict) and all(isinstance(p, str) and Path(p).is_file() for p in paths.values()):
            return paths
    except (OSError, ValueError, RecursionError):
        pass  # absent, unreadable or not an index (written over): build it again
    from lm_eval.tasks import TaskManager

    paths = {name: str(entry.yaml_path) for name, entry in TaskManager().task_index.items() if entry.yaml_path}
    write_json_atomic(paths, file)
    return paths


def task_index_file(cache: Path) -> Path:
    """The file in the cache folder `cache` that keeps `task_yaml_paths`'s map, keyed by lm-eval's
    version and its tasks folder's path and modification time."""
    import lm_eval

    tasks_dir = Path(lm_eval.__file__).parent / "tasks"
    key = hashlib.sha256(f"{task_manager_version()}:{tasks_dir}:{tasks_dir.stat().st_mtime_ns}".encode()).hexdigest()
    return cache / "lm_eval_index" / f"{key[:16]}.json"


@lru_cache(maxsize=8)
def task_manager(folders: tuple[str, ...]):
    """lm-eval's task manager over the folders of the tasks a call evaluates: their configs come
    whole from `lm_eval_config`, so it needs no index of the rest."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_defaults=False, include_path=list(folders))


def task_manager_for(names: list[str | None]):
    """The task manager `simple_evaluate` gets for configs made from lm-eval tasks `names` (None: a
    config of our own, made from no lm-eval task). Configs of our own alone need no index of lm-eval's
    tasks, which a fresh cache would spend seconds building."""
    names = [name for name in names if name is not None]
    paths = task_yaml_paths() if names else {}
    return task_manager(tuple(sorted({str(Path(paths[name]).parent) for name in names})))


def lm_eval_config(name: str, resolve_functions: bool = True) -> dict:
    """The task's full lm-eval config (includes followed; !function entries resolved unless told
    not to: an adapted task replaces them, and lm-eval's LongBench functions import packages we do
    not need)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    path = task_yaml_paths().get(name)
    if path is None:
        raise PathEvalError(f"lm-eval {task_manager_version()} has no task {name!r}")
    return load_yaml(path, resolve_func=resolve_functions)


def task_manager_version() -> str:
    import lm_eval

    return getattr(lm_eval, "__version__", "?")


@dataclass
class LmEvalTask:
    """A suite task bound to lm-eval: the config dict to pass to `simple_evaluate` and the data
    files it reads."""

    spec: TaskSpec
    config: dict
    splits: list[DatasetSplit]
    files: list[Path]
    length: int | None = None  # one lm-eval task per length (generated tasks: per length and seed)
    seed: int | None = None
    lm_eval_name: str | None = None
    protocol: dict = field(default_factory=dict)  # the adapter's choices the provenance records (BABILong's options, LongBench's scoring rule)
    # Under a chat template: whether lm-eval renders the prompts through it (else they hold it already,
    # as generated samples, or the adapter does after cutting them, as LongBench's)
    chat_by_lm_eval: bool = True

    @property
    def name(self) -> str:
        """The task's name inside lm-eval (its results and request-cache key)."""
        return self.lm_eval_name or self.spec.lm_eval_task

    @property
    def filter_name(self) -> str:
        """The filter lm-eval keys the task's results by ("METRIC,NAME"): the suite's `lm_eval_filter`,
        else its config's first, else lm-eval's default "none"."""
        return self.spec.lm_eval_filter or config_filters(self.config)[0]

    @property
    def truncate_middle(self) -> int | None:
        """The prompt tokens kept by middle truncation, for a task that asks for it (LongBench's)."""
        return (self.config.get("generation_kwargs") or {}).get("truncate_middle")


def task_splits(spec: TaskSpec, suite: SuiteSpec, config: dict | None = None,
                length: int | None = None) -> list[DatasetSplit]:
    """The hub splits an lm-eval task reads (at `length`): BABILong's as the suite's options choose (none
    when regenerated), else the task's own `data` if the suite gives one, else its config's."""
    if spec.adapter == "babilong":
        if suite.babilong.source == "regenerated":
            return []
        return [babilong.hub_split(spec, suite.babilong, config_at_length(spec, length), length)]
    if spec.data is not None:
        return [DatasetSplit(spec.data.hf_path, config_at_length(spec, length), spec.data.split)]
    return needed_splits(config or lm_eval_config(spec.lm_eval_task), spec.num_fewshot)


def config_at_length(spec: TaskSpec, length: int | None) -> str | None:
    """The suite's dataset config, with the length filled in where it names one per length."""
    config = spec.data.hf_config
    if config is None or LENGTH_K not in config:
        return config
    if length is None or length % 1024:
        raise PathEvalError(f"task {spec.name} reads one dataset config per length ({config}): run it at "
                            f"multiples of 1024 tokens (0k, 4k, 8k, ...), not {length}")
    return config.replace(LENGTH_K, str(length // 1024))


def needed_splits(config: dict, num_fewshot: int) -> list[DatasetSplit]:
    """The split lm-eval evaluates on (test if the task has one, else validation), plus the
    few-shot source when examples are drawn."""
    evaluated = config.get("test_split") or config.get("validation_split")
    if evaluated is None:
        raise PathEvalError(f"lm-eval task {config['task']} has neither a test nor a validation split")
    names = [evaluated]
    if num_fewshot:
        shots = config.get("fewshot_split") or config.get("training_split") or config.get("validation_split")
        if shots and shots not in names:
            names.append(shots)
    return [DatasetSplit(config["dataset_path"], config.get("dataset_name"), n) for n in names]


def config_filters(config: dict) -> list[str]:
    """The names of an lm-eval config's filters, in its order; ["none"] (lm-eval's default) without."""
    return [f["name"] for f in config.get("filter_list") or [{"name": "none"}]]


def adapter_protocol(spec: TaskSpec, suite: SuiteSpec, length: int | None) -> dict:
    """The adapter's choices the provenance records: BABILong's options, LongBench's scoring rule."""
    if spec.adapter == "babilong":
        return babilong.protocol(spec, suite.babilong, length)
    if spec.adapter == "longbench":
        return {"longbench_rule": suite.longbench_rule}
    return {}


def lm_eval_name(spec: TaskSpec, suite: SuiteSpec, length: int | None) -> str:
    """The name lm-eval keys the task's results and request cache by: at a context length
    `<task>_<length>`; else lm-eval's own task name, unless another task of the suite runs the same
    lm-eval task (the conversion suite's GSM8K in Table 4 and, through a chat template, in Table 5),
    where the suite's task name keeps their results apart. A suite without such a pair keeps lm-eval's
    names, so its records and caches are unchanged."""
    if length is not None:
        return f"{spec.name}_{length}"
    shared = sum(task.lm_eval_task == spec.lm_eval_task for task in suite.tasks) > 1
    return spec.name if shared else spec.lm_eval_task


def build_task(spec: TaskSpec, data_dir: Path, suite: SuiteSpec, length: int | None = None, seed: int = 1234,
               limit: int | None = None, chat: bool = False) -> LmEvalTask:
    """The task's lm-eval config reading the local data; at a context length (a suite with lengths) one
    task per length (lm-eval keys results and its request cache by name: `lm_eval_name`).
    Regenerated BABILong rows are made (or reused) here, from `seed`, `limit` of them if given. `chat`:
    the run applies a chat template (LongBench's prompts then go to the adapter to cut and wrap)."""
    if spec.adapter is not None and spec.adapter not in ADAPTERS:
        raise PathEvalError(f"task {spec.name}: unknown adapter {spec.adapter!r}: choose one of "
                            f"{', '.join(ADAPTERS)}")
    config = lm_eval_config(spec.lm_eval_task, resolve_functions=spec.adapter is None)
    if spec.adapter == "babilong" and suite.babilong.source == "regenerated":
        splits = [DatasetSplit(REGENERATED, config_at_length(spec, length), spec.data.split)]
        samples, inputs = babilong_regenerated.frozen_samples(
            spec.data.split, length, babilong.sample_set(spec, suite.babilong, length), seed, limit, data_dir)
        files, read = [samples], [samples, *inputs]
    else:
        splits = task_splits(spec, suite, config, length)
        beyond_suite = length is not None and length not in (spec.lengths or suite.lengths)
        files = [require(s, data_dir, suite.command_name, f"--lengths {length} " if beyond_suite else "") for s in splits]
        read = files
    local = ADAPTERS[spec.adapter](config, spec, suite) if spec.adapter else dict(config)
    if spec.lm_eval_filter is not None and spec.lm_eval_filter not in config_filters(local):
        raise PathEvalError(f"task {spec.name}: lm-eval's {spec.lm_eval_task} has no filter {spec.lm_eval_filter!r}: "
                            f"choose one of {', '.join(config_filters(local))} for lm_eval_filter")
    if spec.data is not None:  # the suite's rows are the evaluated split
        local["test_split"] = spec.data.split
    for key in SPLIT_KEYS:
        if local.get(key) not in {s.split for s in splits}:
            local[key] = None
    name = lm_eval_name(spec, suite, length)
    local.update(task=name, dataset_path="json", dataset_name=None,
                 dataset_kwargs={"data_files": {s.split: str(f) for s, f in zip(splits, files)}},
                 num_fewshot=spec.num_fewshot)
    if spec.num_fewshot and len(splits) > 1:
        local["fewshot_split"] = splits[1].split
    if chat and spec.adapter == "longbench":
        local = longbench.with_chat(local, spec)
    own_name = None if name == spec.lm_eval_task and length is None else name
    return LmEvalTask(spec, local, splits, read, length=length, lm_eval_name=own_name,
                      protocol=adapter_protocol(spec, suite, length), chat_by_lm_eval=spec.adapter != "longbench")
