"""The training mixture: only train files, the held-out tail left out, seeded synthetic samples."""
from pathlib import Path

import pytest

from path_eval.errors import PathEvalError
from path_eval.zoo import corpus

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
    docs = corpus.real_documents(fake_data_dir(tmp_path / "data"), fake_code_dir(tmp_path / "code"))
    assert docs["babi"] == ["1 Mary moved to the bathroom.\n"]
    assert docs["code"] == ["# json/decoder.py\n", "# os.py\n"]
    book = corpus.strip_gutenberg(BOOK)
    assert docs["books"] == [corpus.split_heldout(book)[0]]
    assert corpus.heldout_text(tmp_path / "data") == corpus.split_heldout(book)[1]
    assert len(corpus.heldout_text(tmp_path / "data")) <= corpus.HELDOUT_CHARS


def test_missing_data_is_one_clear_error(tmp_path):
    with pytest.raises(PathEvalError, match="--data-dir"):
        corpus.real_documents(tmp_path, tmp_path)


@pytest.mark.parametrize("kind", ["niah", "phonebook", "vt", "flipflop"])
def test_synthetic_samples_are_seeded(kind):
    essays = [f"Sentence {i} of an essay." for i in range(100)]
    a = corpus.synthetic_samples(kind, 5, seed=0, essay_sentences=essays)
    assert a == corpus.synthetic_samples(kind, 5, seed=0, essay_sentences=essays)
    assert a != corpus.synthetic_samples(kind, 5, seed=1, essay_sentences=essays)


def test_a_niah_sample_ends_with_the_asked_value():
    sample = corpus.synthetic_samples("niah", 1, seed=0, essay_sentences=["An essay sentence."] * 100)[0]
    value = sample.rstrip(".").split()[-1]
    assert f"is: {value}." in sample and "The special magic number for" in sample
