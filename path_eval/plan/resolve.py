"""The plan stage: everything a run can know before a model loads, resolved and checked here. Which
models (and the context length each runs at), which items (task, kind, length, seeds, sample count,
data files, lm-eval task names), which optional tasks are skipped and why. Missing data, a prompt that
cannot fit the context, a checkpoint that states no context length and a model a task cannot run on
(another vocabulary than a flip-flop task's) all fail here, in one line.
What differs between kinds of task (their checks, lengths, data and names) is their row in
path_eval/kinds/.

The ResolvedPlan is pydantic and round-trips through JSON: the run folder keeps it as plan.json,
with the resolved suite as suite.json."""
from __future__ import annotations

import fnmatch
import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from path_eval.data import MissingDataFile
from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS, Planning, sample_count
from path_eval.models.chat_template import ChatTemplate, select_chat_template
from path_eval.models.context import stated_context_length
from path_eval.plan.models import ModelReference, resolve_models
from path_eval.plan.names import check_log_names, check_model_names, check_suite_names
from path_eval.suites import SuiteSpec, TaskSpec, parse_lengths
from path_eval.suites.schema import is_pattern

log = logging.getLogger("path_eval")


class PlannedModel(ModelReference):
    """A resolved model reference (display name, local folder, source, hub revision) with the context
    length it runs at and the chat template its prompts go through (None: none, a base model's)."""

    # The context length the model runs at; None only for a checkpoint whose config cannot be read,
    # which the model loader then reports.
    max_length: int | None
    chat_template: ChatTemplate | None = None


class ChatOptions(BaseModel):
    """How a run prompts chat models (`--apply-chat-template [NAME]`, `--system-instruction`,
    `--fewshot-as-multiturn`): the template's name among each tokenizer's (None: its default), the
    system turn, and lm-eval's few-shot examples as turns of the chat."""

    model_config = ConfigDict(extra="forbid")
    template: str | None = None
    system_instruction: str | None = None
    fewshot_as_multiturn: bool = False

    @classmethod
    def from_arguments(cls, apply_chat_template: bool | str, system_instruction: str | None,
                       fewshot_as_multiturn: bool) -> ChatOptions | None:
        """The run's chat options from the command line's (and `evaluate`'s) arguments, None without a
        template; a system instruction or multi-turn examples without one: one line."""
        if apply_chat_template is False or apply_chat_template is None:
            for given, flag in ((system_instruction is not None, "--system-instruction"),
                                (fewshot_as_multiturn, "--fewshot-as-multiturn")):
                if given:
                    raise PathEvalError(f"{flag} shapes a chat: add --apply-chat-template (the checkpoint's chat "
                                        "template), or drop it")
            return None
        if isinstance(apply_chat_template, str) and not apply_chat_template.strip():
            raise PathEvalError("--apply-chat-template NAME names no template: give a name, or no value for the "
                                "tokenizer's default")
        return cls(template=apply_chat_template if isinstance(apply_chat_template, str) else None,
                   system_instruction=system_instruction, fewshot_as_multiturn=fewshot_as_multiturn)


class PlannedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    kind: str  # a row of path_eval.kinds.KINDS
    length: int | None
    models: list[str] = []  # the names of the models of the run it runs on
    seeds: list[int] = []  # tasks of a sampled kind (generated, flip-flop): the seeds samples are made from
    samples: int | None = None  # tasks of a sampled kind: samples per seed
    data_files: list[str] = []  # present when the plan was made (generated: the generator's inputs)
    lm_eval_tasks: list[str] = []  # the names lm-eval keys results and its request cache by

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"unknown kind of task {value!r}: one of {', '.join(KINDS)} (path_eval/kinds/)")
        return value


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
    chat: ChatOptions | None = None
    allow_code_execution: bool = False  # --allow-code-execution: code tasks run their programs in the sandbox

    def spec(self, item: PlannedItem) -> TaskSpec:
        return self.suite.task(item.task)

    def evaluated_models(self) -> list[PlannedModel]:
        """The models some item runs on, in the order a run takes them (the others are never loaded)."""
        return [model for model in self.models if any(model.name in item.models for item in self.items)]

    def of_kind(self, kind: str, model: str) -> list[PlannedItem]:
        """The items of this kind that run on `model` (its name in the plan)."""
        return [item for item in self.items if item.kind == kind and model in item.models]


def chosen_items(suite: SuiteSpec, tasks: list[str] | None, lengths: list[str] | None, limit: int | None,
                 max_length: int | None) -> list[tuple[TaskSpec, int | None]]:
    """(task, length) pairs the arguments select, checked against the suite: --lengths for every
    task that runs at context lengths, else each task's own lengths, else the suite's. An lm-eval
    task without lengths of its own or the suite's (LongBench-E's, in the table3 suite) runs once."""
    chosen = suite.select(tasks) if tasks else list(suite.tasks)
    given = None
    if lengths:
        if not (suite.lengths or any(task.lengths for task in suite.tasks)):
            raise PathEvalError(f"suite {suite.name} has no context lengths: drop --lengths")
        given = parse_lengths(lengths, "--lengths")
    if limit is not None and limit <= 0:
        raise PathEvalError("--limit must be a positive number of samples per task")
    pairs = []
    for task in chosen:
        kind = KINDS[task.kind]
        if kind.check:
            kind.check(task)
        at_lengths = bool(task.lengths or suite.lengths) or kind.needs_lengths
        wanted = (given if at_lengths else None) or list(task.lengths or suite.lengths) or [None]
        too_long = [n for n in wanted if n is not None and n > (max_length or suite.max_length or n)]
        if too_long and max_length is not None:
            raise PathEvalError(f"length {too_long[0]} exceeds --max-length {max_length}: give shorter --lengths "
                                "or raise --max-length")
        if too_long:  # the suite's own max_length would cut its own samples
            raise PathEvalError(f"task {task.name}'s length {too_long[0]} exceeds suite {suite.name}'s max_length "
                                f"{suite.max_length}: give shorter --lengths, --max-length {too_long[0]} or more, or "
                                "raise max_length (in a copy of the suite)")
        if kind.needs_lengths and wanted == [None]:
            raise PathEvalError(f"task {task.name} runs at context lengths: give --lengths or lengths in the suite")
        for length in wanted:
            if kind.check_length and length is not None:
                kind.check_length(task, length)
        pairs += [(task, length) for length in wanted]
    return pairs


def task_models(task: TaskSpec, names: list[str]) -> list[str]:
    """The run's models the task runs on: those its `models:` names (every one without the list),
    each entry a name or a shell-style pattern (`a5_*`: a study's trained models, named by the
    workshop). A plain name that is neither a model of the run nor of the zoo is a typo: one line; a
    pattern may match no model of a run."""
    from path_eval.models.zoo import zoo_names

    if not task.models:
        return list(names)
    unknown = [m for m in task.models if not is_pattern(m) and m not in names and m not in zoo_names()]
    if unknown:
        raise PathEvalError(f"task {task.name} runs on model {unknown[0]!r}, which is neither a model of this run "
                            f"({', '.join(names)}) nor of the zoo ({', '.join(zoo_names())}): fix the task's models: list")
    return [name for name in names if any(fnmatch.fnmatchcase(name, entry) for entry in task.models)]


def check_task_models(suite: SuiteSpec, items: list[PlannedItem], references: list[ModelReference]) -> None:
    """Each task against each model it runs on, by its kind's `check_model` (path_eval/kinds/): a
    mismatch found only once the model had loaded would come after every model before it had run."""
    by_name = {reference.name: reference for reference in references}
    for item in {item.task: item for item in items}.values():  # a task's items differ only in length
        check = KINDS[item.kind].check_model
        for name in item.models if check else []:
            check(suite.task(item.task), by_name[name])


# Why a task of a kind that executes code is skipped without --allow-code-execution.
CODE_EXECUTION_OFF = "executes model-written programs: pass --allow-code-execution (docs/code-execution.md)"


def code_execution_skips(tasks: list[TaskSpec], allowed: bool) -> dict[str, str]:
    """The tasks that run model-written programs (their kind's `executes_code`), each with why it is
    skipped, where the run does not allow code execution. Where it does, the sandbox must be able to
    run them on this machine: one line otherwise, before any model loads."""
    running = [task for task in tasks if KINDS[task.kind].executes_code]
    if not allowed:
        return {task.name: CODE_EXECUTION_OFF for task in running}
    if running:
        from path_eval.sandbox import unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            raise PathEvalError(f"--allow-code-execution: task {running[0].name} runs model-written programs, which "
                                f"cannot run safely here: {reason}")
    return {}


def resolve_plan(suite: SuiteSpec, models: list[str], tasks: list[str] | None = None,
                 lengths: list[str] | None = None, limit: int | None = None, seed: int = 1234,
                 data_dir: Path | None = None, max_length: int | None = None,
                 chat: ChatOptions | None = None, allow_code_execution: bool = False) -> ResolvedPlan:
    """Everything before a model loads, each kind's items by its rules (path_eval/kinds/). The
    context length: --max-length, else the suite's, else the most any item needs (its kind's
    `context`: a corpus block, a flip-flop sequence, a generated sample and BOS), else each
    checkpoint's own. With `chat`, each model's chat template (a checkpoint without one: one line).
    Tasks of a kind that executes code are skipped unless `allow_code_execution`
    (`code_execution_skips`)."""
    from path_eval.tasks.generated import sample_seeds

    check_suite_names(suite)
    references = resolve_models(models)
    check_model_names(references)
    templates = {reference.name: select_chat_template(reference.path, reference.name, chat.template)[0]
                 for reference in references} if chat else {}
    names = [reference.name for reference in references]
    selected = chosen_items(suite, tasks, lengths, limit, max_length)
    runs_on = {task.name: task_models(task, names) for task, _ in selected}
    skipped = {name: f"it runs on {', '.join(suite.task(name).models)}, none of them in this run"
               for name, on in runs_on.items() if not on}
    selected = [(task, length) for task, length in selected if runs_on[task.name]]
    if not selected:
        raise PathEvalError(f"no chosen task of suite {suite.name} runs on {', '.join(names)}: each names its models "
                            "(models: in the suite; `python eval.py list` shows them)")
    skipped |= code_execution_skips([task for task, _ in selected], allow_code_execution)
    selected = [(task, length) for task, length in selected if task.name not in skipped]
    if not selected:
        raise PathEvalError(f"every chosen task of suite {suite.name} {CODE_EXECUTION_OFF}")
    if data_dir is None:
        raise PathEvalError("no data dir: give --data-dir DIR (filled by `python eval.py download`)")
    planning = Planning(suite, data_dir, seed, limit)
    items, fits = [], []
    for name, kind in KINDS.items():  # missing data fails here, before any model loads
        for task, length in selected:
            if task.kind != name or task.name in skipped:
                continue
            try:
                planned = kind.plan(task, length, planning)
            except PathEvalError as err:
                if not (task.optional and isinstance(err, MissingDataFile)):  # a broken file stops the run
                    raise
                skipped[task.name] = str(err)
                continue
            if kind.sampled and seed + task.seeds > 2**32:  # numpy seeds its generators below 2**32
                count = task.seeds
                raise PathEvalError(f"task {task.name} makes its samples from {count} seeds, {seed} to "
                                    f"{seed + count - 1}, past numpy's largest seed {2**32 - 1}: give a --seed of "
                                    f"at most {2**32 - count}")
            sampled = {"seeds": sample_seeds(task, seed), "samples": sample_count(task, suite, limit)} \
                if kind.sampled else {}
            items.append(PlannedItem(task=task.name, kind=name, length=length, models=runs_on[task.name],
                                     data_files=[str(f) for f in planned.data_files],
                                     lm_eval_tasks=planned.lm_eval_tasks, **sampled))
            if planned.fits:
                fits.append(planned.fits)
    check_log_names(suite, items, names)
    check_task_models(suite, items, references)
    for name, reason in skipped.items():
        log.warning("%s skipped: %s", name, reason)
    run_length = max_length or suite.max_length or max(
        [KINDS[i.kind].context(i.length) for i in items if KINDS[i.kind].context], default=None)
    for check in fits:
        check(run_length)
    planned_models = []
    for reference in references:
        length = run_length or stated_context_length(reference.path)
        if run_length is None:
            for check in fits:
                check(length)
        planned_models.append(PlannedModel(**reference.model_dump(), max_length=length,
                                           chat_template=templates.get(reference.name)))
    return ResolvedPlan(suite=suite, models=planned_models, items=items,
                        skipped=[SkippedTask(task=n, reason=r) for n, r in skipped.items()],
                        limit=limit, seed=seed, data_dir=data_dir, chat=chat,
                        allow_code_execution=allow_code_execution)
