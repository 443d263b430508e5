"""The lm-eval adapter stage: importing this registers the lm-eval model `path`."""
from path_eval.lm.adapter import PathEvalLM

__all__ = ["PathEvalLM"]
