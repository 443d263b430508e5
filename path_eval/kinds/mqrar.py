"""The `mqrar` kind: MQRAR-N (`mqrar: {n: N, pairs: 32}`; path_eval/tasks/mqrar.py) at the task's
lengths (tokens per sequence), the sequences made from the run's seeds and frozen, one
teacher-forced forward each, scored by the tagging accuracies at the keys
(path_eval/metrics/tagging.py) on models that use the task's vocabulary."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from path_eval.errors import PathEvalError
from path_eval.kinds import tagging
from path_eval.tasks.mqrar import FIRST_VALUE, PAIRS, VOCABULARY

if TYPE_CHECKING:
    from path_eval.suites import TaskSpec

class MqrarOptions(BaseModel):
    """`n`: the label at a key is the value assigned to it N assignments back (1: MQRAR itself);
    `pairs`: key-value pairs assigned first, and queries after them."""

    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1, le=64)
    pairs: int = Field(default=PAIRS, ge=1, lt=FIRST_VALUE)


def check_length(task: TaskSpec, length: int) -> None:
    pairs = task.options.pairs
    if length % 2 or length < 4 * pairs:
        raise PathEvalError(f"task {task.name}: an MQRAR sequence of {pairs} pairs is an even number of at least "
                            f"{4 * pairs} tokens, not {length}: give --lengths 768 (the PaTH paper's)")


KIND = tagging.tagging_kind("mqrar", MqrarOptions, "path_eval.evaluators.tagging:MqrarEvaluator", VOCABULARY,
                           describe=lambda task: f"MQRAR-{task.options.n}, {task.options.pairs} pairs",
                           context=lambda length: length, check_length=check_length)
