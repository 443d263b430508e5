"""The zoo's training workshop, run from a checkout (`python -m training.NAME`), never shipped: the
training text (`corpus`, `text_sources`), the tokenizer (`tokenizer`), training (`train`, and
`gpu_train.sh` on a GPU host), the retrains' tolerances (`retrain`), the runs' summary (`runs`), the
first zoo's CPU look (`measure`), the parity against fla (`parity`) and the study's compact copy
(`study`, and `gpu_study.sh`). What they make ships in `path_eval/zoo/`: the checkpoints under
`models/` and the held-out text under `heldout/`. training/README.md says why and how."""
from __future__ import annotations

from pathlib import Path

from path_eval.errors import PathEvalError

ZOO_FOLDER = Path(__file__).resolve().parents[1] / "path_eval" / "zoo"  # the shipped zoo, in this checkout


def run_cli(main) -> None:
    """Run a training script's `main`: input the user can fix ends as one line (exit 2), no traceback."""
    import sys

    try:
        main()
    except PathEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
