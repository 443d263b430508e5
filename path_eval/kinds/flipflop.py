"""The `flipflop` kind: flip-flop sequences FFL(p_ignore) (`flipflop: {p_ignore: P}`; path_eval/tasks/
flipflop.py) made from the run's seeds at the task's lengths, one teacher-forced forward each,
scored by `flipflop_error` over the read positions."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from path_eval.errors import PathEvalError
from path_eval.kinds.base import Kind, Planning, PlannedFields, SamplePairs, one_log_per_length

if TYPE_CHECKING:
    from path_eval.plan.models import ModelReference
    from path_eval.suites import TaskSpec


class FlipFlopSpec(BaseModel):
    """Flip-flop sequences FFL(p_ignore) (path_eval/tasks/flipflop.py) at the task's lengths."""

    model_config = ConfigDict(extra="forbid")
    p_ignore: float = Field(ge=0.0, lt=1.0)


def check_length(task: TaskSpec, length: int) -> None:
    if length < 4 or length % 2:
        raise PathEvalError(f"task {task.name}: a flip-flop sequence is an even number of at least 4 tokens, not "
                            f"{length}: give --lengths 512 (the paper's)")


def plan(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    return PlannedFields()  # the sequences are made from the seeds: nothing to read


def check_model(task: TaskSpec, model: ModelReference) -> None:
    """The sequences are ids of the flip-flop vocabulary: a model whose tokenizer files give the
    symbols other ids is refused here. A tokenizer `token_id_lookup` cannot read without torch is
    checked by the evaluator, once loaded."""
    from path_eval.models.tokenizer import token_id_lookup
    from path_eval.tasks.flipflop import check_vocabulary

    token_id = token_id_lookup(model.path)
    if token_id is not None:
        check_vocabulary(token_id, model.name, task.name)


KIND = Kind(name="flipflop", key="flipflop", options=FlipFlopSpec,
            evaluator="path_eval.evaluators.flipflop:FlipFlopEvaluator",
            describe=lambda task: f"flip-flop p_ignore {task.options.p_ignore}", plan=plan,
            log_names=one_log_per_length, sampled=True, context=lambda length: length,
            metrics=frozenset({"flipflop_error"}), check_length=check_length, check_model=check_model,
            pairing=SamplePairs(key=lambda row: (row["seed"], row["doc_id"]), numerator=lambda row: row["wrong"],
                                denominator=lambda row: row["reads"], stratum=lambda row: row["seed"]))
