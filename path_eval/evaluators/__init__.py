"""The evaluators: one per kind of task (named by the kind's row; registry.py: `evaluator_of`),
behind one interface (interface.py): lm_eval.py, generated.py, corpus.py, flipflop.py."""
from path_eval.evaluators.interface import (EvaluationContext, Evaluator, FrozenSet, LmEvalOutput, PositionBucket,
                                            TASK_SECTIONS, TaskResult, lm_eval_output, native_output)

__all__ = ["EvaluationContext", "Evaluator", "FrozenSet", "LmEvalOutput", "PositionBucket", "TASK_SECTIONS",
           "TaskResult", "lm_eval_output", "native_output"]
