"""A progress bar for the adapter's request loops: done/total, elapsed, ETA and the model's tokens
per second so far. Off under `--quiet`, which also silences lm-eval's own bars (TQDM_DISABLE=1, as
does a run without `--verbose`)."""
from __future__ import annotations

import os

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from path_eval.locations import PROGRESS_VARIABLE
from path_eval.terminal import console


def bars_shown() -> bool:
    """The command line's setting where it gave one (`PROGRESS_VARIABLE`), else tqdm's TQDM_DISABLE,
    as a Python program set it."""
    own = os.environ.get(PROGRESS_VARIABLE)
    if own is not None:
        return own == "1"
    return os.environ.get("TQDM_DISABLE") != "1"


class RequestProgress:
    """with RequestProgress(lm, "generate_until", total) as bar: ... bar.advance(n)"""

    def __init__(self, lm, description: str, total: int | None, enabled: bool = True):
        self.lm = lm
        self.enabled = (enabled and bars_shown() and total != 0
                        and getattr(lm, "process_index", 0) == 0)  # one bar per run, not one per process
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 TextColumn("{task.fields[rate]}"), console=console(stderr=True))
        self.task = self.progress.add_task(description, total=total, rate="")

    def __enter__(self) -> "RequestProgress":
        if self.enabled:
            self.progress.start()
        return self

    def advance(self, count: int = 1) -> None:
        rate = f"{self.lm.tokens_processed / self.lm.seconds:,.0f} tok/s" if self.lm.seconds else ""
        self.progress.update(self.task, advance=count, rate=rate)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.progress.stop()
