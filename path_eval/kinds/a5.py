"""The `a5` kind: the A5 word problem (`a5: {form: product}` or `{form: identity}`;
path_eval/tasks/a5.py) at the task's lengths, each length k letters per word (after BOS), the words
made from the run's seeds and frozen, one teacher-forced forward each, scored by the tagging
accuracies (path_eval/metrics/tagging.py) on models that use the task's vocabulary."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from path_eval.errors import PathEvalError
from path_eval.kinds import tagging
from path_eval.tasks.a5 import VOCABULARY

if TYPE_CHECKING:
    from path_eval.suites import TaskSpec


class A5Options(BaseModel):
    """`form`: product (Merrill et al.'s: the label at every letter is the prefix's product) or
    identity (the PaTH paper's prose: words over (1 2 3), (1 2 4), (1 2 5) and their inverses, the
    label at every letter whether the prefix is the identity)."""

    model_config = ConfigDict(extra="forbid")
    form: Literal["product", "identity"] = "product"


def check_length(task: TaskSpec, length: int) -> None:
    shortest = 2 if task.options.form == "identity" else 1
    if length < shortest:
        raise PathEvalError(f"task {task.name}: an A5 {task.options.form} word has at least {shortest} letters, not "
                            f"{length}: give --lengths 20 (the word length k; Merrill et al.'s)")


KIND = tagging.tagging_kind("a5", A5Options, "path_eval.evaluators.tagging:A5Evaluator", VOCABULARY,
                           describe=lambda task: f"A5 word problem, {task.options.form} form",
                           context=lambda length: length + 1, check_length=check_length)  # BOS and k letters
