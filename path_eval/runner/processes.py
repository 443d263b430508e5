"""Data-parallel coordination of a run (`accelerate launch` or torchrun): every process loads the
model and evaluates its share of the documents (lm-eval splits them); the first process alone
writes plan, records and results; the processes' counters are gathered for the provenance. (Frozen
samples are made by the first process while the others wait: `path_eval.evaluators.generated`.)"""
from __future__ import annotations

import os

from path_eval.lm.distributed import finish_processes  # noqa: F401  (the run's last step)


def first_before_loading() -> bool:
    """Whether this is the first process, before any model (and process group) exists: the
    launchers' RANK (absent when run plainly)."""
    return int(os.environ.get("RANK", "0")) == 0


def writes_results(lm) -> bool:
    return lm.rank == 0


def gathered_counters(lm) -> list[dict]:
    """Every process's counters over every segment of the run, in rank order (a one-element list
    when run plainly)."""
    return lm.gather_object(lm.total_counters())
