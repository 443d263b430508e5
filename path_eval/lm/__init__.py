"""The lm-eval adapter stage: importing this registers the lm-eval model `path` (and keeps git's
errors from lm-eval's commit lookup off the terminal: `quiet_git`)."""
from path_eval.lm import quiet_git  # noqa: F401
from path_eval.lm.adapter import PathEvalLM

__all__ = ["PathEvalLM"]
