"""The trained zoo's data, `models/` and `heldout/`; `path_eval.models.zoo` finds the checkpoints."""
from __future__ import annotations

from path_eval.errors import PathEvalError


def run_cli(main) -> None:
    """Run a zoo script's `main`: input the user can fix ends as one line (exit 2), no traceback."""
    import sys

    try:
        main()
    except PathEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
