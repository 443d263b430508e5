"""One exception type for input the user can fix: the CLI prints its message as one line."""


class PathEvalError(Exception):
    """A problem with the user's input (paths, checkpoints, options), with the fix in the message."""
