"""What reaches the terminal: text from files (a suite's description, task and model names, a line
of an error quoting a file) never carries control characters through, so a hostile file cannot move
the cursor, clear the screen, retitle the window or reorder a line (bidi overrides). Every line the
command line prints goes through `printable` (plain lines) or `console` (rich tables)."""
from __future__ import annotations

import logging
import re
import sys

# Control characters (C0 but tab and newline, DEL, C1; a carriage return but in a CRLF line end, which
# CSV writes), lone surrogates (a file name that is not UTF-8), and the format characters that
# reorder or hide text (bidi overrides and isolates, zero-width marks): printed raw, a name could
# move the cursor, clear the screen, or read as another.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u202a-\u202e"
                            "\u2066-\u2069\ufeff]|\r(?!\n)")


def printable(text: str) -> str:
    """`text` with every such character written as its escape (\\x1b, \\u202e): readable, and
    inert on any terminal."""
    return _NOT_PRINTABLE.sub(lambda match: (f"\\x{ord(match[0]):02x}" if ord(match[0]) < 0x100 else
                                             f"\\u{ord(match[0]):04x}"), text)


def say(text: str, file=None, end: str = "\n", flush: bool = False) -> None:
    """print(), of one text made `printable`."""
    print(printable(str(text)), file=file, end=end, flush=flush)


# An error line longer than this (a YAML alias bomb quoted back, a 100 MB data line) is cut in the
# middle: its start names the problem and its end the fix.
ERROR_LINE_LIMIT = 2000


def error_line(text: str) -> str:
    """The one `error:` line of a failed command: `printable`, its newlines escaped too, at most
    ERROR_LINE_LIMIT characters."""
    line = printable(str(text).replace("\r\n", "\n")).replace("\n", "\\n")
    if len(line) <= ERROR_LINE_LIMIT:
        return f"error: {line}"
    head, tail = ERROR_LINE_LIMIT * 2 // 3, ERROR_LINE_LIMIT // 3
    return f"error: {line[:head]} ... ({len(line) - head - tail} characters left out) ... {line[-tail:]}"


class PrintableFormatter(logging.Formatter):
    """A handler's own formatter, its lines passed through `printable`."""

    def __init__(self, inner: logging.Formatter):
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return printable(self.inner.format(record))


def printable_logging() -> None:
    """The lines the root logger's handlers write to the terminal pass through `printable` (a
    warning naming a file or a task quotes it)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.stdout) and \
                not isinstance(handler.formatter, PrintableFormatter):
            handler.setFormatter(PrintableFormatter(handler.formatter or logging.Formatter()))


def console(**options):
    """A rich Console whose text (a table's title and cells, a printed string: every string it is
    given becomes Text through `render_str`, before the layout measures it) is passed through
    `printable`, and that reads no markup: a task named "[red]x" is shown as written. Its own
    styling is left as it is."""
    from rich.console import Console

    class PrintableConsole(Console):
        def render_str(self, text: str, **options):
            return super().render_str(printable(text), **options)

    return PrintableConsole(markup=False, emoji=False, **options)
