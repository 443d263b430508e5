"""What reaches the terminal: text from files (a suite's description, task and model names, a line
of an error quoting a file) never carries control characters through, so a hostile file cannot move
the cursor, clear the screen, retitle the window or reorder a line (bidi overrides). Every line the
command line prints goes through `printable` (plain lines) or `console` (rich tables)."""
from __future__ import annotations

import unicodedata

# Format characters that reorder or hide text (bidi overrides and isolates, zero-width marks):
# printed raw, a name could read as another.
_HIDING_FORMATS = {*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF}


def printable(text: str) -> str:
    """`text` with every control character but newline and tab written as its escape (\\x1b,
    \\u202e): readable, and inert on any terminal."""
    if text.isprintable():  # the common case: nothing to escape
        return text
    return "".join(ch if ch in "\n\t" or not _hidden(ch) else
                   (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}") for ch in text)


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn") and ch not in "\n\t" or ord(ch) in _HIDING_FORMATS


def say(text: str, file=None, end: str = "\n", flush: bool = False) -> None:
    """print(), of one text made `printable`."""
    print(printable(str(text)), file=file, end=end, flush=flush)


# An error line longer than this (a YAML alias bomb quoted back, a 100 MB data line) is cut in the
# middle: its start names the problem and its end the fix.
ERROR_LINE_LIMIT = 2000


def error_line(text: str) -> str:
    """The one `error:` line of a failed command: `printable`, its newlines escaped too, at most
    ERROR_LINE_LIMIT characters."""
    line = printable(str(text)).replace("\n", "\\n")
    if len(line) <= ERROR_LINE_LIMIT:
        return f"error: {line}"
    head, tail = ERROR_LINE_LIMIT * 2 // 3, ERROR_LINE_LIMIT // 3
    return f"error: {line[:head]} ... ({len(line) - head - tail} characters left out) ... {line[-tail:]}"


def printable_logging() -> None:
    """The root logger's handlers print their lines through `printable` (a warning naming a file
    or a task quotes it)."""
    import logging

    class PrintableFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return printable(super().format(record))

    for handler in logging.getLogger().handlers:
        handler.setFormatter(PrintableFormatter(handler.formatter._fmt if handler.formatter else None))


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
