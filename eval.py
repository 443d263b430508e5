#!/usr/bin/env python
"""path-eval command line: `python eval.py --help`."""
import signal
import sys


def _interrupted_while_starting(signum, frame):
    """SIGINT or SIGTERM before the command line has set its own handlers (while its modules import):
    the same one line and exit status as later, and no second interrupt while the process exits."""
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_IGN)
    print(f"error: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    for _signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signum, _interrupted_while_starting)
    from path_eval.cli import main

    sys.exit(main())
