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
from path_eval.models.context import stated_context_length
from path_eval.plan.models import ModelReference, resolve_models
from path_eval.suites import SuiteSpec, TaskSpec, parse_length

log = logging.getLogger("path_eval")

Kind = Literal["lm_eval", "generated", "corpus", "flipflop"]


class PlannedModel(ModelReference):
    """A resolved model reference (display name, local folder, source, hub revision) with the context
    length it runs at."""

    # The context length the model runs at; None only for a checkpoint whose config cannot be read,
    # which the model loader then reports.
    max_length: int | None


class PlannedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    kind: Kind
    length: int | None
    models: list[str] = []  # the names of the models of the run it runs on
    seeds: list[int] = []  # generated and flip-flop tasks: the seeds samples are made from
    samples: int | None = None  # generated and flip-flop tasks: samples per seed
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

    def of_kind(self, kind: Kind, model: str) -> list[PlannedItem]:
        """The items of this kind that run on `model` (its name in the plan)."""
        return [item for item in self.items if item.kind == kind and model in item.models]


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
    if task.flipflop and length is not None and (length < 4 or length % 2):
        raise PathEvalError(f"task {task.name}: a flip-flop sequence is an even number of at least 4 tokens, not "
                            f"{length}: give --lengths 512 (the paper's)")


def chosen_items(suite: SuiteSpec, tasks: list[str] | None, lengths: list[str] | None, limit: int | None,
                 max_length: int | None) -> list[tuple[TaskSpec, int | None]]:
    """(task, length) pairs the arguments select, checked against the suite: --lengths for every
    task that runs at context lengths, else each task's own lengths, else the suite's. An lm-eval
    task without lengths of its own or the suite's (LongBench-E's, in the table3 suite) runs once."""
    chosen = [suite.task(name) for name in tasks] if tasks else list(suite.tasks)
    given = None
    if lengths:
        if not (suite.lengths or any(task.lengths for task in suite.tasks)):
            raise PathEvalError(f"suite {suite.name} has no context lengths: drop --lengths")
        given = [parse_length(x) for x in lengths]
    if limit is not None and limit <= 0:
        raise PathEvalError("--limit must be a positive number of samples per task")
    pairs = []
    for task in chosen:
        check_generated_task(task)
        at_lengths = bool(task.lengths or suite.lengths) or not task.lm_eval_task
        wanted = (given if at_lengths else None) or list(task.lengths or suite.lengths) or [None]
        if max_length is not None:
            too_long = [n for n in wanted if n is not None and n > max_length]
            if too_long:
                raise PathEvalError(f"length {too_long[0]} exceeds --max-length {max_length}: give shorter --lengths "
                                    "or raise --max-length")
        if (task.generator or task.corpus or task.flipflop) and wanted == [None]:
            raise PathEvalError(f"task {task.name} runs at context lengths: give --lengths or lengths in the suite")
        for length in wanted:
            check_task_length(task, length)
        pairs += [(task, length) for length in wanted]
    return pairs


def task_models(task: TaskSpec, names: list[str]) -> list[str]:
    """The run's models the task runs on: those its `models:` names (every one without the list).
    A name that is neither a model of the run nor of the zoo is a typo: one line."""
    from path_eval.models.zoo import zoo_names

    if not task.models:
        return list(names)
    unknown = [m for m in task.models if m not in names and m not in zoo_names()]
    if unknown:
        raise PathEvalError(f"task {task.name} runs on model {unknown[0]!r}, which is neither a model of this run "
                            f"({', '.join(names)}) nor of the zoo ({', '.join(zoo_names())}): fix the task's models: list")
    return [name for name in names if name in task.models]


def check_room_for_generation(tasks: list, max_length: int | None) -> None:
    """A middle-truncated prompt plus the task's new tokens must fit the context, or the model
    adapter would cut its left end too."""
    for task in tasks:
        new_tokens = task.config["generation_kwargs"]["max_gen_toks"] if task.truncate_middle else 0
        if task.truncate_middle and max_length and task.truncate_middle + new_tokens > max_length:
            raise PathEvalError(f"task {task.spec.name}: truncate_middle {task.truncate_middle} + {new_tokens} new "
                                f"tokens exceed max_length {max_length}: raise --max-length or lower the suite's "
                                "truncate_middle (in a copy of the suite)")


def sample_count(task: TaskSpec, suite: SuiteSpec, limit: int | None) -> int:
    """Samples per length and seed of a generated or flip-flop task: the task's, else the suite's,
    capped by --limit."""
    count = task.samples or suite.samples
    return min(limit, count) if limit else count


def resolve_plan(suite: SuiteSpec, models: list[str], tasks: list[str] | None = None,
                 lengths: list[str] | None = None, limit: int | None = None, seed: int = 1234,
                 data_dir: Path | None = None, max_length: int | None = None) -> ResolvedPlan:
    """Everything before a model loads. The context length: --max-length, else the suite's, else the
    longest corpus block, flip-flop sequence or generated sample (+1 for BOS), else each checkpoint's
    own."""
    from path_eval.tasks import build_task
    from path_eval.tasks.extrapolation import documents
    from path_eval.tasks.generated import input_files, lm_eval_name, sample_seeds

    references = resolve_models(models)
    names = [reference.name for reference in references]
    selected = chosen_items(suite, tasks, lengths, limit, max_length)
    runs_on = {task.name: task_models(task, names) for task, _ in selected}
    skipped = {name: f"it runs on {', '.join(suite.task(name).models)}, none of them in this run"
               for name, on in runs_on.items() if not on}
    selected = [(task, length) for task, length in selected if runs_on[task.name]]
    if not selected:
        raise PathEvalError(f"no chosen task of suite {suite.name} runs on {', '.join(names)}: each names its models "
                            "(models: in the suite; `python eval.py list` shows them)")
    if data_dir is None:
        raise PathEvalError("no data dir: give --data-dir DIR (filled by `python eval.py download`)")
    fixed = [(build_task(task, data_dir, suite, length, seed, limit), length) for task, length in selected
             if task.lm_eval_task]
    items = [PlannedItem(task=t.spec.name, kind="lm_eval", length=length, models=runs_on[t.spec.name],
                         data_files=[str(f) for f in t.files], lm_eval_tasks=[t.name]) for t, length in fixed]
    for task, length in selected:  # missing corpus data fails before any model loads
        if task.corpus:
            items.append(PlannedItem(task=task.name, kind="corpus", length=length, models=runs_on[task.name],
                                     data_files=[str(f) for f in documents(task.corpus, data_dir, suite.name)[1]]))
    for task, length in selected:
        if task.flipflop:
            items.append(PlannedItem(task=task.name, kind="flipflop", length=length, models=runs_on[task.name],
                                     seeds=sample_seeds(task, seed), samples=sample_count(task, suite, limit)))
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
        seeds = sample_seeds(task, seed)
        items.append(PlannedItem(task=task.name, kind="generated", length=length, models=runs_on[task.name],
                                 seeds=seeds, samples=sample_count(task, suite, limit),
                                 data_files=[str(f) for f in files],
                                 lm_eval_tasks=[lm_eval_name(task, length, s) for s in seeds]))
    for name, reason in skipped.items():
        log.warning("%s skipped: %s", name, reason)
    # A generated sample fills its length without BOS (as the originals count); the model also reads BOS.
    run_length = max_length or suite.max_length or max(
        [i.length for i in items if i.kind in ("corpus", "flipflop")]
        + [i.length + 1 for i in items if i.kind == "generated"], default=None)
    fixed_tasks = [t for t, _ in fixed]
    check_room_for_generation(fixed_tasks, run_length)
    planned = []
    for reference in references:
        length = run_length or stated_context_length(reference.path)
        if run_length is None:
            check_room_for_generation(fixed_tasks, length)
        planned.append(PlannedModel(**reference.model_dump(), max_length=length))
    return ResolvedPlan(suite=suite, models=planned, items=items,
                        skipped=[SkippedTask(task=n, reason=r) for n, r in skipped.items()],
                        limit=limit, seed=seed, data_dir=data_dir)
