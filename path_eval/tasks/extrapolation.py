"""Length extrapolation (the paper's Figure 3, fla's protocol): tokenize the documents of a corpus
one after another (each with the tokenizer's usual BOS) into one stream, cut it into blocks of
exactly L tokens (what is left over at the end is dropped), score every block with one forward
pass, and report perplexity per position bucket (2048 tokens by default) and overall.

Position j of a block predicts token j + 1, so a block gives L - 1 scored tokens. (fla's ppl.py
also scores the last position against an end-of-sequence token that is not in the data; we do not.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import json
import re
import sysconfig
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from path_eval.data import DatasetSplit, require
from path_eval.errors import PathEvalError

if TYPE_CHECKING:  # annotations only: the kinds' rules call this module
    from path_eval.kinds.corpus import CorpusSpec

GUTENBERG_START = re.compile(r"^\*\*\*\s*START OF (THE|THIS) PROJECT GUTENBERG E(BOOK|TEXT).*$", re.M)
GUTENBERG_END = re.compile(r"^\*\*\*\s*END OF (THE|THIS) PROJECT GUTENBERG E(BOOK|TEXT).*$", re.M)
GUTENBERG_LAST_LINE = re.compile(r"\n[ \t]*End of (the )?Project Gutenberg.*\s*$", re.I)


def strip_gutenberg(text: str) -> str:
    """The book between Project Gutenberg's '*** START OF ...' and '*** END OF ...' lines (the
    licence header and footer removed, and the closing 'End of the Project Gutenberg EBook of ...'
    line); texts without the markers are returned unchanged."""
    start, end = GUTENBERG_START.search(text), GUTENBERG_END.search(text)
    if start:
        text_start = start.end()
        text = text[text_start:end.start()] if end and end.start() > text_start else text[text_start:]
        text = GUTENBERG_LAST_LINE.sub("\n", text)  # "End of the Project Gutenberg EBook of ..."
    return text.strip("\n\r") + "\n"


def _dotted(row: dict, field: str):
    for part in field.split("."):
        row = row[part]
    return row


def corpus_split(corpus: CorpusSpec) -> DatasetSplit | None:
    return DatasetSplit(corpus.hf_path, corpus.hf_config, corpus.split) if corpus.hf_path else None


def documents(corpus: CorpusSpec, data_dir: Path, suite: str) -> tuple[Iterator[str], list[Path]]:
    """The corpus's texts in a fixed order, and the files they come from."""
    if corpus.python_stdlib:
        root = Path(sysconfig.get_paths()["stdlib"])
        files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts)
        return (f.read_text(encoding="utf-8", errors="replace") for f in files), files
    if corpus.package_file is not None:
        file = Path(str(resources.files("path_eval").joinpath(corpus.package_file)))
        if not file.is_file():
            raise PathEvalError(f"corpus file {corpus.package_file} is not in the path_eval package ({file})")
        return iter([file.read_text(encoding="utf-8")]), [file]
    if corpus.folder is not None:
        folder = Path(data_dir) / corpus.folder
        files = sorted(folder.glob("*.txt"))
        if not files:
            raise PathEvalError(f"no .txt files in {folder}: put the corpus's texts there")
        clean = strip_gutenberg if corpus.strip_gutenberg else (lambda t: t)
        return (clean(f.read_text(encoding="utf-8", errors="replace")) for f in files), files
    file = require(corpus_split(corpus), data_dir, suite)

    def rows() -> Iterator[str]:
        seen = set()
        with open(file, encoding="utf-8") as handle:
            for count, line in enumerate(handle):
                if corpus.max_docs is not None and count >= corpus.max_docs:
                    break
                row = json.loads(line)
                if corpus.dedupe is not None:
                    key = _dotted(row, corpus.dedupe)
                    if key in seen:
                        continue
                    seen.add(key)
                yield _dotted(row, corpus.field)
    return rows(), [file]


def token_stream(texts: Iterable[str], tokenizer) -> Iterator[int]:
    for text in texts:
        yield from tokenizer.encode(text)


def blocks(stream: Iterable[int], length: int, max_blocks: int | None = None) -> Iterator[list[int]]:
    """Consecutive, non-overlapping blocks of exactly `length` tokens; a short tail is dropped."""
    block: list[int] = []
    made = 0
    for token in stream:
        block.append(token)
        if len(block) == length:
            yield block
            made += 1
            if max_blocks is not None and made >= max_blocks:
                return
            block = []


def bucket_edges(length: int, bucket_size: int) -> list[tuple[int, int]]:
    """[first, last] prediction positions of each bucket of a block of `length` tokens."""
    last = length - 2  # positions 0 .. L-2 predict tokens 1 .. L-1
    return [(start, min(start + bucket_size - 1, last)) for start in range(0, last + 1, bucket_size)]
