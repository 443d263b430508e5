"""The offline data layout: every dataset a suite needs lives as
    DATA_DIR/<org>/<name>/<config>/<split>.jsonl      (config `default` where there is none)
with the dataset's original fields (written by `download`, path_eval/data/hub.py); runs read only
from such a folder. Here: where a split's file is, the one-line error when it is missing or not
JSON, the data fingerprint of a task's files, and the atomic JSONL writer."""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.locations import cache_dir


def default_data_dir() -> Path:
    return Path(os.environ.get("PATH_EVAL_DATA", cache_dir() / "data"))


@dataclass(frozen=True)
class DatasetSplit:
    """One split of one Hugging Face dataset (config None: the dataset has no configs)."""

    path: str
    config: str | None
    split: str

    def file(self, data_dir: Path) -> Path:
        return Path(data_dir) / self.path / (self.config or "default") / f"{self.split}.jsonl"

    def __str__(self) -> str:
        return f"{self.path}{'/' + self.config if self.config else ''} [{self.split}]"


class MissingDataFile(PathEvalError):
    """A data file that is absent (rather than present and broken): the one problem that skips an
    `optional` task instead of stopping the run."""


def require(split: DatasetSplit, data_dir: Path, suite: str, download_options: str = "") -> Path:
    """The split's local file, or one error line naming the download that fetches it (`suite`: what
    `--suite` takes, its name or its file; `download_options`, e.g. a length outside the suite's own),
    a command that runs as printed."""
    file = split.file(data_dir)
    fetch = f"python eval.py download --suite {shlex.quote(suite)} {download_options}--data-dir {shlex.quote(str(data_dir))}"
    refuse_irregular(file, f"run `{fetch}`, or copy the file there")
    if not file.is_file():
        raise MissingDataFile(f"missing data file {file} ({split}): run `{fetch}` on a machine with internet, or copy "
                              "the file there")
    check_jsonl(file, fetch)
    return file


def refuse_irregular(file: Path, fix: str) -> None:
    """A data path that exists but is not a regular file (a FIFO, a device, a link to /dev/zero) is
    one error line: reading it would block, or never end."""
    try:
        mode = Path(file).stat().st_mode  # through a link: what the link reaches
    except OSError:  # absent, or a dangling link: the caller says it is missing
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "no regular file"
        link = f" (a link to {os.readlink(file)})" if Path(file).is_symlink() else ""
        raise PathEvalError(f"{file}{link} is {kind}, not a data file: {fix}")


# The longest line a data file may hold, checked before the line is read whole: the longest rows of
# the suites' data (BABILong's 1M-token samples) are a few MB; a 100 MB line is no row of theirs.
MAX_LINE_BYTES = 64 * 2**20

_CHECKED_JSONL: set[tuple[str, int, int]] = set()


def check_jsonl(file: Path, fetch: str) -> None:
    """Every line of a JSONL data file is one JSON object (a row), and there is at least one, or one
    error line naming the file, the line and `fetch` (the command that writes it again). Each file is
    read once per (path, size, mtime)."""
    stat = file.stat()
    key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _CHECKED_JSONL:
        return
    rows = 0
    with open(file, "rb") as handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(line) > MAX_LINE_BYTES:
                raise PathEvalError(f"{file} line {number} is longer than {MAX_LINE_BYTES // 2**20} MiB, longer than "
                                    f"any row of the suites' data: run `{fetch}` again or fix that line")
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                problem = f"is not JSON ({str(err).split(':')[0]})"
            except RecursionError:
                problem = "nests deeper than Python reads"
            else:
                problem = None if isinstance(row, dict) else f"is a JSON {type(row).__name__}, not an object (a row)"
            if problem:
                raise PathEvalError(f"{file} line {number} {problem}: run `{fetch}` again or fix that line")
            rows += 1
    if not rows:
        raise PathEvalError(f"{file} holds no rows: run `{fetch}` again, or copy the file there whole")
    _CHECKED_JSONL.add(key)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(files: list[Path]) -> str:
    """One hash for the data a task read: sha256 over (file name, file sha256) pairs, sorted."""
    digest = hashlib.sha256()
    for file in sorted(files, key=str):
        digest.update(f"{Path(file).parent.parent.name}/{Path(file).parent.name}/{Path(file).name}:"
                      f"{file_sha256(file)}\n".encode())
    return digest.hexdigest()
