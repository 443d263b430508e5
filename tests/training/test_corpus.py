"""The training mixture: only train files, the held-out tail left out, seeded synthetic samples in
the evaluation tasks' formats, whole samples packed into windows; the committed held-out text is
the tail the corpus drops."""
import random
import re
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from path_eval.errors import PathEvalError
from tests.shared_data import SHARED_DATA
from training import corpus

BOOK = "PG header\r\n*** START OF THIS BOOK ***\r\n" + "A line of the book.\r\n\r\n" * 2000 + "*** END OF THIS BOOK ***\r\n"


def fake_data_dir(root: Path) -> Path:
    (root / "gutenberg_books").mkdir(parents=True)
    (root / corpus.HELDOUT_BOOK).write_text(BOOK)
    babi = root / corpus.BABI_TRAIN
    babi.mkdir(parents=True)
    (babi / "qa1_single-supporting-fact_train.txt").write_text("1 Mary moved to the bathroom.\n")
    (babi / "qa1_single-supporting-fact_test.txt").write_text("1 A TEST LINE.\n")
    (root / corpus.ESSAYS).mkdir(parents=True)
    (root / corpus.ESSAYS / "essay.txt").write_text("An essay. It has sentences.")
    return root


def fake_code_dir(root: Path) -> Path:
    for name in ("os.py", "json/decoder.py", "test/test_os.py", "tkinter/ttk.py", "unittest/tests/t.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    return root


def test_real_documents_read_train_files_only_and_drop_the_heldout_tail(tmp_path):
    docs = corpus.real_documents(fake_data_dir(tmp_path / "data"), fake_code_dir(tmp_path / "code"), text_dir=None)
    assert docs["babi"] == ["1 Mary moved to the bathroom.\n"]
    assert docs["code"] == ["# json/decoder.py\n", "# os.py\n"]
    book = corpus.strip_gutenberg(BOOK)
    assert docs["books"] == [corpus.split_heldout(book)[0]]
    assert corpus.heldout_text(tmp_path / "data") == corpus.split_heldout(book)[1]
    assert len(corpus.heldout_text(tmp_path / "data")) <= corpus.HELDOUT_CHARS


def test_missing_data_is_one_clear_error(tmp_path):
    with pytest.raises(PathEvalError, match="--data-dir"):
        corpus.real_documents(tmp_path, tmp_path, None)


@pytest.mark.parametrize("kind", ["niah", "phonebook", "vt", "flipflop"])
def test_synthetic_samples_are_seeded(kind):
    essays = [f"Sentence {i} of an essay." for i in range(100)]
    a = corpus.synthetic_samples(kind, 5, seed=0, essay_sentences=essays)
    assert a == corpus.synthetic_samples(kind, 5, seed=0, essay_sentences=essays)
    assert a != corpus.synthetic_samples(kind, 5, seed=1, essay_sentences=essays)


ZOO_TOKENIZER = Path(__file__).resolve().parents[2] / "path_eval" / "zoo" / "models" / "rope" / "tokenizer.json"
ESSAY = [f"Sentence {i} of an essay about things." for i in range(400)]


def test_a_niah_sample_answers_with_the_values_of_its_queried_needles():
    """The answer after RULER's answer prefix lists exactly the values its question asks for, each
    inserted in the haystack as RULER's needle sentence."""
    for sample in corpus.synthetic_samples("niah", 200, seed=3, essay_sentences=ESSAY):
        prompt, answer = sample.rsplit(" mentioned in the provided text ", 1)
        values = answer.removeprefix("is ").removeprefix("are ").rstrip(".").split(", ")
        keys = prompt.rsplit(" for ", 1)[1].replace(", and ", ", ").split(", ")  # the answer prefix's
        needles = dict(re.findall(r"One of the special magic \w+ for (\S+) is: (\S+)\.", prompt))
        assert len(keys) == len(set(keys)) >= 1
        for value in values:
            assert f" is: {value}." in prompt
        assert all(key in needles for key in keys)


def test_niah_samples_cover_ruler_s_haystacks_keys_and_counts():
    samples = corpus.synthetic_samples("niah", 300, seed=0, essay_sentences=ESSAY)
    assert any("The grass is green." in s for s in samples)  # noise
    assert any("Sentence 1" in s for s in samples)  # essay
    assert any(s.count("One of the special magic") > 6 for s in samples)  # distractor needles
    assert any("special magic uuids" in s or "special magic uuid " in s for s in samples)
    assert any("special magic numbers for" in s and ", and " in s for s in samples)  # several queries


def test_essay_spans_start_anywhere_and_hold_enough_words():
    rng = random.Random(0)
    span = corpus.EssaySpan(ESSAY, rng)
    starts = {span.sentences(30)[0] for _ in range(20)}
    assert len(starts) > 10
    assert sum(len(s.split()) for s in span.sentences(50)) >= 50


def test_vt_samples_end_with_the_chain():
    for sample in corpus.synthetic_samples("vt", 50, seed=0, essay_sentences=ESSAY):
        names = sample.rsplit("they are: ", 1)[1].split()
        value = re.findall(r"assigned the value (\d+) in the text above", sample)[-1]
        assert f"VAR {names[0]} = {value}" in sample
        for old, new in zip(names, names[1:]):
            assert f"VAR {new} = VAR {old} " in sample


def test_packing_keeps_samples_whole_and_drops_those_too_long():
    tokenizer = Tokenizer.from_file(str(ZOO_TOKENIZER))
    samples = corpus.synthetic_samples("phonebook", 60, seed=1, essay_sentences=ESSAY, length=256)
    windows = corpus.packed_windows(tokenizer, samples, 257)
    bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    found = []
    for window in windows.tolist():
        content = window[:len(window) - next(i for i, t in enumerate(reversed(window)) if t != pad)]
        assert pad not in content  # pads only at the end
        assert content[-1] == eos
        while content:
            end = content.index(eos)
            assert content[0] == bos
            found.append(tokenizer.decode(content[1:end]))
            content = content[end + 1:]
    fitting = [s for s in samples if len(tokenizer.encode(s).ids) + 2 <= 257]
    assert sorted(found) == sorted(fitting) and len(fitting) < len(samples)
    assert (windows == pad).mean() < 0.25


def test_the_mixture_is_whole():
    assert abs(sum(corpus.MIXTURE.values()) - 1) < 1e-9
    assert set(corpus.MIXTURE) == set(corpus.REAL_SOURCES) | set(corpus.SYNTHETIC_KINDS)


def test_missing_prose_is_one_clear_error(tmp_path):
    from training import text_sources

    with pytest.raises(PathEvalError, match="text_sources"):
        text_sources.documents(tmp_path)


def test_heldout_split_on_a_hand_made_book():
    raw = "header\r\n*** START OF THIS BOOK ***\r\n" + "para one.\r\n\r\n" * 3 + "tail.\r\n" \
          + "End of Project Gutenberg's Book\r\n*** END OF THIS BOOK ***\r\nlicence"
    book = corpus.strip_gutenberg(raw)
    assert book == "para one.\n\n" * 2 + "para one.\n\ntail.\n"
    train, heldout = corpus.split_heldout(book)
    assert train + heldout == book


@pytest.mark.skipif(not (SHARED_DATA / "gutenberg_books").is_dir(), reason="needs the shared data folder")
def test_committed_heldout_text_is_the_tail_the_corpus_drops():
    assert corpus.heldout_text(SHARED_DATA) == corpus.HELDOUT_FILE.read_text()
    book = corpus.strip_gutenberg((SHARED_DATA / corpus.HELDOUT_BOOK).read_text(encoding="utf-8"))
    assert corpus.split_heldout(book)[0] + corpus.HELDOUT_FILE.read_text() == book
