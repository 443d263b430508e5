#!/usr/bin/env python
"""path-eval command line: `python eval.py --help`."""
import sys

from path_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
