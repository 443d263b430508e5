"""The plan stage: which models run which tasks at which lengths, checked before anything loads."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.suites import SuiteSpec, TaskSpec, parse_length


@dataclass
class PlanItem:
    task: TaskSpec
    length: int | None


@dataclass
class Plan:
    suite: SuiteSpec
    models: list[Path]
    items: list[PlanItem]
    limit: int | None = None
    seed: int = 1234
    data_dir: Path | None = None
    notes: list[str] = field(default_factory=list)


def check_generated_task(task: TaskSpec) -> None:
    """A generated task names a known generator and metrics the registry scores on generated samples."""
    from path_eval.tasks.generated import check_generated_metrics, check_generator

    if not task.generator:
        return
    check_generator(task.generator)
    check_generated_metrics(task)


def build_plan(suite: SuiteSpec, models: list[str], tasks: list[str] | None = None,
               lengths: list[str] | None = None, limit: int | None = None, seed: int = 1234,
               data_dir: Path | None = None, max_length: int | None = None) -> Plan:
    if not models:
        raise PathEvalError("give at least one --model CHECKPOINT_DIR")
    paths = []
    for model in models:
        path = Path(model)
        if not path.is_dir():
            raise PathEvalError(f"model path {model} is not a directory: give a checkpoint folder")
        paths.append(path)
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
            raise PathEvalError(f"length {too_long[0]} exceeds --max-length {max_length}")
    if limit is not None and limit <= 0:
        raise PathEvalError("--limit must be a positive number of samples per task")
    for task in chosen:
        check_generated_task(task)
        if (task.generator or task.corpus) and wanted == [None]:
            raise PathEvalError(f"task {task.name} runs at context lengths: give --lengths or lengths in the suite")
    items = [PlanItem(task, length) for task in chosen for length in wanted]
    return Plan(suite, paths, items, limit, seed, data_dir)
