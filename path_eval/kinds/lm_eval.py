"""The `lm_eval` kind: tasks lm-eval defines (`lm_eval_task: NAME`), run by lm-eval on the `path`
model, adapted to the original benchmark's rules where the task names an `adapter` (LongBench,
BABILong: path_eval/tasks/longbench.py, babilong.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from path_eval.errors import PathEvalError
from path_eval.kinds.base import Kind, Planning, PlannedFields, lm_eval_log_names

if TYPE_CHECKING:
    from path_eval.suites import SuiteSpec, TaskSpec


def check_room_for_generation(tasks: list, max_length: int | None) -> None:
    """A middle-truncated prompt plus the task's new tokens must fit the context, or the model
    adapter would cut its left end too."""
    for task in tasks:
        new_tokens = task.config["generation_kwargs"]["max_gen_toks"] if task.truncate_middle else 0
        if task.truncate_middle and max_length and task.truncate_middle + new_tokens > max_length:
            raise PathEvalError(f"task {task.spec.name}: truncate_middle {task.truncate_middle} + {new_tokens} new "
                                f"tokens exceed max_length {max_length}: raise --max-length or lower the suite's "
                                "truncate_middle (in a copy of the suite)")


def validate(task: TaskSpec) -> None:
    """An adapter's options go together: lm-eval's own config decides the stop sequences and the
    prompt of a task it runs unadapted."""
    if task.stop and not task.adapter:
        raise ValueError("an lm-eval task stops where its own config says; stop applies to adapted tasks "
                         "(adapter: ...): remove it")
    if task.prompt_edits and not task.adapter:
        raise ValueError("prompt_edits need a task adapter (adapter: ...)")
    if task.adapter and not task.data:
        raise ValueError("an adapted task needs lm_eval_task and the data it reads (data: ...)")


def plan(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks import build_task

    built = build_task(task, planning.data_dir, planning.suite, length, planning.seed, planning.limit)
    return PlannedFields(data_files=list(built.files), lm_eval_tasks=[built.name],
                         fits=lambda max_length: check_room_for_generation([built], max_length))


def prompts_chat(task: TaskSpec) -> bool:
    """Every task's prompts go through a chat template, but the LongBench datasets' its pred.py leaves
    unwrapped."""
    if task.adapter != "longbench":
        return True
    from path_eval.tasks import longbench

    return longbench.chat_wrapped(task)


def splits(task: TaskSpec, suite: SuiteSpec, lengths: list[int] | None):
    """lm-eval's own splits of the task (its adapter's `data` in their place), at each length
    (BABILong: one config per length, none when it regenerates its rows)."""
    from path_eval.tasks.lm_eval_tasks import task_splits

    return [split for n in lengths or [None] for split in task_splits(task, suite, length=n)]


def fetches(task: TaskSpec, suite: SuiteSpec) -> bool:
    """Every lm-eval task reads at least the split it evaluates on (`task_splits`), except BABILong
    regenerated offline: known without reading lm-eval's config."""
    return not (task.adapter == "babilong" and suite.babilong.source == "regenerated")


def sample_scorer(task: TaskSpec, suite: SuiteSpec):
    """LongBench-E's scores are ours (its adapter), made again from the logged generations; lm-eval
    scores every other task of this kind."""
    if task.adapter != "longbench":
        return None
    from path_eval.tasks import longbench

    return longbench.sample_scorer(task, suite)


KIND = Kind(name="lm_eval", key="lm_eval_task", options=str, evaluator="path_eval.evaluators.lm_eval:LmEvalEvaluator",
            describe=lambda task: f"lm-eval {task.options}", plan=plan, log_names=lm_eval_log_names,
            needs_lengths=False, validate=validate, reads=frozenset({"num_fewshot", "stop", "data", "adapter",
                                                                    "prompt_edits", "lm_eval_filter"}),
            splits=splits, fetches=fetches, sample_scorer=sample_scorer, prompts_chat=prompts_chat)
