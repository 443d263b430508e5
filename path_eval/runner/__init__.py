"""The run stage: a resolved plan -> per model, its evaluators -> records -> OUT/results.json."""
from path_eval.runner.run import RunOptions, run, saved_requests

__all__ = ["RunOptions", "run", "saved_requests"]
