"""Task adapters: how each task of a suite becomes lm-eval tasks reading the local data dir."""
from path_eval.tasks.lm_eval_tasks import LmEvalTask, build_task

__all__ = ["LmEvalTask", "build_task"]
