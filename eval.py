#!/usr/bin/env python
"""path-eval command line: `python eval.py --help`."""
import os
import signal
import sys


def _interrupted_while_starting(signum, frame):
    """SIGINT or SIGTERM before the command line has set its own handlers (while its modules import):
    the same one line and exit status as later, and no second interrupt while the process exits."""
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_IGN)
    print(f"error: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
    raise SystemExit(128 + signum)


def _exit_on_swallowed_exit(unraisable):
    """That SystemExit raised where Python drops it (a weakref callback of the import system's locks):
    its line is printed already, so exit with its status now."""
    if isinstance(unraisable.exc_value, SystemExit) and unraisable.exc_value.code in (130, 143):
        os._exit(unraisable.exc_value.code)
    sys.__unraisablehook__(unraisable)


if __name__ == "__main__":
    for _signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signum, _interrupted_while_starting)
    sys.unraisablehook = _exit_on_swallowed_exit
    from path_eval.cli import command_line

    command_line()
