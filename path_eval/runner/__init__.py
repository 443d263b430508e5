"""The run stage: plan -> model -> lm-eval (through our adapter) -> samples, metrics and results."""
from path_eval.runner.run import RunOptions, run

__all__ = ["RunOptions", "run"]
