"""The plan stage: everything a run can know before a model loads, resolved and checked here. Which
models (and the context length each runs at), which items (task, kind, length, seeds, sample count,
data files, lm-eval task names), which optional tasks are skipped and why. Missing data, a prompt that
cannot fit the context and a checkpoint that states no context length all fail here, in one line.

The ResolvedPlan is pydantic and round-trips through JSON: the run folder keeps it as plan.json,
with the resolved suite as suite.json."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from path_eval.errors import PathEvalError
from path_eval.suites import SuiteSpec, TaskSpec, parse_length

log = logging.getLogger("path_eval")

Kind = Literal["lm_eval", "generated", "corpus"]


class PlannedModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: Path
    name: str  # the folder name, or the whole path where folder names collide
    # The context length the model runs at; None only for a checkpoint whose config cannot be read,
    # which the model loader then reports.
    max_length: int | None


class PlannedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    kind: Kind
    length: int | None
    seeds: list[int] = []  # generated tasks: the seeds samples are made from
    samples: int | None = None  # generated tasks: samples per seed
    data_files: list[str] = []  # present when the plan was made (generated: the generator's inputs)
    lm_eval_tasks: list[str] = []  # the names lm-eval keys results and its request cache by


class SkippedTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    reason: str


class ResolvedPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suite: SuiteSpec
    models: list[PlannedModel]
    items: list[PlannedItem]
    skipped: list[SkippedTask] = []
    limit: int | None = None
    seed: int = 1234
    data_dir: Path

    def spec(self, item: PlannedItem) -> TaskSpec:
        return self.suite.task(item.task)

    def of_kind(self, kind: Kind) -> list[PlannedItem]:
        return [item for item in self.items if item.kind == kind]


def check_generated_task(task: TaskSpec) -> None:
    """A generated task names a known generator and metrics the registry scores on generated samples."""
    from path_eval.tasks.generated import check_generated_metrics, check_generator

    if not task.generator:
        return
    check_generator(task.generator)
    check_generated_metrics(task)


def check_task_length(task: TaskSpec, length: int | None) -> None:
    """Generated samples need room for a prompt; a corpus block needs two tokens to predict one."""
    from path_eval.tasks.generated import check_length

    if task.generator and length is not None:
        check_length(task, length)
    if task.corpus and length is not None and length < 2:
        raise PathEvalError(f"task {task.name}: a block of {length} token(s) has nothing to predict: give a "
                            "longer --lengths (e.g. 4k)")


def model_paths(models: list[str]) -> list[Path]:
    if not models:
        raise PathEvalError("give at least one --model CHECKPOINT_DIR")
    paths = []
    for model in models:
        path = Path(model)
        if not path.is_dir():
            raise PathEvalError(f"model path {model} is not a directory: give a checkpoint folder")
        paths.append(path)
    return paths


def model_names(paths: list[Path]) -> list[str]:
    """Folder names, or whole paths where folder names collide."""
    names = [p.name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths)]


def chosen_items(suite: SuiteSpec, tasks: list[str] | None, lengths: list[str] | None, limit: int | None,
                 max_length: int | None) -> list[tuple[TaskSpec, int | None]]:
    """(task, length) pairs the arguments select, checked against the suite."""
    chosen = [suite.task(name) for name in tasks] if tasks else list(suite.tasks)
    if lengths:
        if not suite.lengths:
            raise PathEvalError(f"suite {suite.name} has no context lengths: drop --lengths")
        wanted = [parse_length(x) for x in lengths]
    else:
        wanted = list(suite.lengths) or [None]
    if max_length is not None:
        too_long = [n for n in wanted if n is not None and n > max_length]
        if too_long:
            raise PathEvalError(f"length {too_long[0]} exceeds --max-length {max_length}: give shorter --lengths or "
                                "raise --max-length")
    if limit is not None and limit <= 0:
        raise PathEvalError("--limit must be a positive number of samples per task")
    for task in chosen:
        check_generated_task(task)
        if (task.generator or task.corpus) and wanted == [None]:
            raise PathEvalError(f"task {task.name} runs at context lengths: give --lengths or lengths in the suite")
        for length in wanted:
            check_task_length(task, length)
    return [(task, length) for task in chosen for length in wanted]


def check_room_for_generation(tasks: list, max_length: int | None) -> None:
    """A middle-truncated prompt plus the task's new tokens must fit the context, or the model
    adapter would cut its left end too."""
    for task in tasks:
        new_tokens = task.config["generation_kwargs"]["max_gen_toks"] if task.truncate_middle else 0
        if task.truncate_middle and max_length and task.truncate_middle + new_tokens > max_length:
            raise PathEvalError(f"task {task.spec.name}: truncate_middle {task.truncate_middle} + {new_tokens} new "
                                f"tokens exceed max_length {max_length}: raise --max-length or lower the suite's "
                                "truncate_middle (in a copy of the suite)")


def stated_context_length(path: Path) -> int | None:
    """The context length the checkpoint's config states, read as the model loader reads the config
    (no weights; a config.json that does not parse fails here, in one line). None where there is no
    config.json or its model type is unknown: loading then says why in one line."""
    from path_eval.lm.adapter import NO_CONTEXT_LENGTH, checkpoint_max_length
    from path_eval.models.config import PathEvalConfig
    from path_eval.models.loading import FLA_MODEL_TYPES, read_config

    if not (path / "config.json").is_file():
        return None
    raw = read_config(path / "config.json")
    model_type = raw.get("model_type")
    if model_type == PathEvalConfig.model_type:
        config = PathEvalConfig.from_dict({k: v for k, v in raw.items() if k != "model_type"})
    elif model_type in FLA_MODEL_TYPES:  # of an fla config's length fields, the loader keeps this one
        config = PathEvalConfig(max_position_embeddings=raw.get("max_position_embeddings"))
    else:
        from transformers import AutoConfig
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        if model_type not in CONFIG_MAPPING:
            return None
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    length = checkpoint_max_length(config)
    if not length:
        raise PathEvalError(NO_CONTEXT_LENGTH)
    return length


def resolve_plan(suite: SuiteSpec, models: list[str], tasks: list[str] | None = None,
                 lengths: list[str] | None = None, limit: int | None = None, seed: int = 1234,
                 data_dir: Path | None = None, max_length: int | None = None) -> ResolvedPlan:
    """Everything before a model loads. The context length: --max-length, else the suite's, else the
    longest corpus block or generated sample (+1 for BOS), else each checkpoint's own."""
    from path_eval.lm.distributed import launched_processes
    from path_eval.tasks import build_task
    from path_eval.tasks.extrapolation import documents
    from path_eval.tasks.generated import input_files, lm_eval_name, sample_seeds

    paths = model_paths(models)
    selected = chosen_items(suite, tasks, lengths, limit, max_length)
    if data_dir is None:
        raise PathEvalError("no data dir: give --data-dir DIR (filled by `python eval.py download`)")
    fixed = [(build_task(task, data_dir, suite, length), length) for task, length in selected if task.lm_eval_task]
    items = [PlannedItem(task=t.spec.name, kind="lm_eval", length=length, data_files=[str(f) for f in t.files],
                         lm_eval_tasks=[t.name]) for t, length in fixed]
    for task, length in selected:  # missing corpus data fails before any model loads
        if task.corpus:
            items.append(PlannedItem(task=task.name, kind="corpus", length=length,
                                     data_files=[str(f) for f in documents(task.corpus, data_dir, suite.name)[1]]))
    skipped: dict[str, str] = {}
    for task, length in selected:
        if not task.generator or task.name in skipped:
            continue
        try:
            files = input_files(task, data_dir, suite.name)
        except PathEvalError as err:
            if not task.optional:
                raise
            skipped[task.name] = str(err)
            continue
        count = min(limit, task.samples or suite.samples) if limit else (task.samples or suite.samples)
        seeds = sample_seeds(task, seed)
        items.append(PlannedItem(task=task.name, kind="generated", length=length, seeds=seeds, samples=count,
                                 data_files=[str(f) for f in files],
                                 lm_eval_tasks=[lm_eval_name(task, length, s) for s in seeds]))
    for name, reason in skipped.items():
        log.warning("%s skipped (optional, its data is missing): %s", name, reason)
    corpus_items = [i for i in items if i.kind == "corpus"]
    if corpus_items and launched_processes() > 1:
        raise PathEvalError("per-position perplexity (corpus tasks) is not shared between processes yet: run the "
                            "extrapolation suite without accelerate launch (one process per model instead)")
    # A generated sample fills its length without BOS (as the originals count); the model also reads BOS.
    run_length = max_length or suite.max_length or max(
        [i.length for i in corpus_items] + [i.length + 1 for i in items if i.kind == "generated"], default=None)
    fixed_tasks = [t for t, _ in fixed]
    check_room_for_generation(fixed_tasks, run_length)
    planned = []
    for path, name in zip(paths, model_names(paths)):
        length = run_length or stated_context_length(path)
        if run_length is None:
            check_room_for_generation(fixed_tasks, length)
        planned.append(PlannedModel(path=path, name=name, max_length=length))
    return ResolvedPlan(suite=suite, models=planned, items=items,
                        skipped=[SkippedTask(task=n, reason=r) for n, r in skipped.items()],
                        limit=limit, seed=seed, data_dir=data_dir)
