"""The trained small-model zoo: its training data (`corpus`), the flip-flop language (`flipflop`),
its tokenizer (`tokenizer`), the training script (`train`) and the checkpoints under `models/`."""


def run_cli(main) -> None:
    """Run a zoo script's `main`: input the user can fix ends as one line (exit 2), no traceback."""
    import sys

    from path_eval.errors import PathEvalError

    try:
        main()
    except PathEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
