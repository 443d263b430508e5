"""The zoo's training mixture, offline and seeded: real text plus synthetic retrieval and
state-tracking sequences, cut into windows of the training length.

Real text (from the shared data folder, the prose fetched by `text_sources`, a copy of the Python
standard library):
  books   the Gutenberg books of the shared data folder, headers stripped, less the held-out tail
          of Jack Sheppard
  prose   public-domain and permissively licensed prose that the package registries ship
          (`training.text_sources`): more distinct text, so that it repeats a few times, not 17
  essays  the Paul Graham essays
  babi    the bAbI en-10k *train* files (never the test files)
  code    the standard library's .py files, tests and GUI packages excluded
Synthetic, each sample whole inside one window, in the evaluation tasks' own formats (RULER's
`draw_niah` and `draw_chain`, PhoneBook's entries and prompt) at every haystack size up to the window,
drawn from a seed domain of their own, so no evaluation sample is reproduced:
  niah      RULER's needle tasks in every combination the benchmark uses: noise, essay or
            distractor-needle haystacks; word, number or uuid keys; number or uuid values; 1-4
            keys, values per key and queries; then the answer. Essay haystacks start at a random
            sentence (RULER's always start at the first), so no stretch of essay is learned by heart
  phonebook "Name: number" lines, two examples and a query, then the number
  vt        RULER's variable-tracking chains in noise lines, half of them after a solved example
            chain, then the chain's names
  flipflop  FFL(0.8) sequences in their text form
No evaluation set is read: not WikiText-2, LAMBADA, PIQA, HellaSwag, WinoGrande, ARC, SQuAD,
HotpotQA, nor the bAbI test files.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from path_eval.errors import PathEvalError
from training import ZOO_FOLDER, run_cli

TRAINING_LENGTH = 1024
HELDOUT_BOOK = "gutenberg_books/pg16215_jack_sheppard.txt"
HELDOUT_CHARS = 150_000
HELDOUT_FILE = ZOO_FOLDER / "heldout" / "jack_sheppard_tail.txt"
BABI_TRAIN = "babi/tasks_1-20_v1-2/en-10k"
ESSAYS = "paul_graham_essays/PaulGrahamEssays"
CODE_EXCLUDED = ("test", "tests", "idlelib", "tkinter", "lib2to3", "turtledemo", "site-packages", "ensurepip")
# Share of the training windows from each source. Half is retrieval and state tracking in the
# evaluation tasks' formats (a small model learns to retrieve only from plenty of it: a 4 x 256 RoPE
# model trained on 30% NIAH still failed NIAH at 65M tokens and passed at 131M); half real text, as
# much of each source as its distinct tokens bear at 131M tokens: prose (12M tokens) about 3 epochs,
# code and bAbI 3-5, the Gutenberg books and essays (0.6M) about 10.
MIXTURE = {"books": 0.03, "prose": 0.30, "essays": 0.015, "babi": 0.035, "code": 0.12,
           "niah": 0.30, "phonebook": 0.14, "vt": 0.05, "flipflop": 0.01}
REAL_SOURCES = ("books", "prose", "essays", "babi", "code")
SYNTHETIC_SEED_DOMAIN = 7_000_000  # far from the evaluation tasks' seeds
SYNTHETIC_CHUNK = 4_000  # samples drawn by one seeded generator (the unit of parallel drawing)
SYNTHETIC_UNIQUE_WINDOWS = 60_000  # per kind: more windows than this repeat
SAMPLES_PER_WINDOW = 2.2  # about, for sizes drawn uniformly up to the window (drawn with a margin)
# Tokens of one haystack unit with the zoo's tokenizer (measured), to spread sizes over the window.
TOKENS_PER_UNIT = {"noise": 24, "needle": 26, "needle_uuids": 65, "essay": 1.9, "entry": 13}
PROMPT_TOKENS = 110  # template, question, answer prefix and answer, about


def strip_gutenberg(text: str) -> str:
    """The book between the `*** START OF ...` and `*** END OF ...` markers, less PG's closing
    line, with LF line ends."""
    text = text.replace("\r\n", "\n")
    start = re.search(r"^\*\*\* ?START OF.*$", text, flags=re.M)
    end = re.search(r"^\*\*\* ?END OF.*$", text, flags=re.M)
    if not start or not end:
        raise PathEvalError("a Gutenberg book lacks its *** START / *** END markers: use the raw PG text")
    book = text[start.end():end.start()].strip()
    return re.sub(r"\n+End of (the )?Project Gutenberg.*$", "", book, flags=re.S).strip() + "\n"


def split_heldout(book: str) -> tuple[str, str]:
    """(training part, held-out tail): the tail starts at the first paragraph break at or after
    HELDOUT_CHARS from the end."""
    cut = book.find("\n\n", max(0, len(book) - HELDOUT_CHARS))
    return book[:cut + 2], book[cut + 2:]


def real_documents(data_dir: Path, code_dir: Path, text_dir: Path | None) -> dict[str, list[str]]:
    """Each real source's documents, in a fixed order (no prose without `text_dir`)."""
    data_dir, code_dir = Path(data_dir), Path(code_dir)
    for needed in (data_dir / HELDOUT_BOOK, data_dir / BABI_TRAIN, data_dir / ESSAYS):
        if not needed.exists():
            raise PathEvalError(f"{needed} is missing: give --data-dir the shared data folder (with gutenberg_books, "
                                "babi, paul_graham_essays)")
    books = []
    for path in sorted((data_dir / "gutenberg_books").glob("*.txt")):
        book = strip_gutenberg(path.read_text(encoding="utf-8", errors="replace"))
        books.append(split_heldout(book)[0] if path.name == Path(HELDOUT_BOOK).name else book)
    babi = [path.read_text() for path in sorted((data_dir / BABI_TRAIN).glob("*_train.txt"))]
    essays = [path.read_text(encoding="utf-8", errors="replace") for path in sorted((data_dir / ESSAYS).glob("*.txt"))]
    code = [path.read_text(encoding="utf-8", errors="replace") for path in code_files(code_dir)]
    if not code:
        raise PathEvalError(f"no .py files under {code_dir}: give --code-dir a Python standard library folder")
    prose = []
    if text_dir is not None:
        from training import text_sources

        prose = [doc for docs in text_sources.documents(Path(text_dir)).values() for doc in docs]
    return {"books": books, "prose": prose, "essays": essays, "babi": babi, "code": code}


def code_files(code_dir: Path) -> list[Path]:
    files = []
    for path in sorted(Path(code_dir).rglob("*.py")):
        parts = path.relative_to(code_dir).parts
        if not any(part in CODE_EXCLUDED or part.startswith("test") for part in parts):
            files.append(path)
    return files


def heldout_text(data_dir: Path) -> str:
    return split_heldout(strip_gutenberg((Path(data_dir) / HELDOUT_BOOK).read_text(encoding="utf-8")))[1]


# --- synthetic samples: each a whole text, drawn from one random.Random ---------------------------

class EssaySpan:
    """Consecutive essay sentences from a random start, as RULER's `EssayHaystack.sentences` hands
    them to the needle inserter (which always starts at the first sentence)."""

    def __init__(self, essay_sentences: list[str], rng: random.Random):
        self.essay_sentences, self.rng = essay_sentences, rng

    def sentences(self, num_words: int) -> list[str]:
        start, words, span = self.rng.randrange(len(self.essay_sentences)), 0, []
        while words < num_words:
            sentence = self.essay_sentences[(start + len(span)) % len(self.essay_sentences)]
            span.append(sentence)
            words += len(sentence.split())
        return span


def units_up_to(length: int, tokens_per_unit: float, rng: random.Random, reserved: int = PROMPT_TOKENS) -> int:
    """A haystack size drawn uniformly from 1 to about what fills a window of `length` tokens."""
    return rng.randint(1, max(1, int((length - reserved) / tokens_per_unit)))


def niah_sample(rng: random.Random, essay_sentences: list[str], length: int) -> str:
    from path_eval.tasks.ruler.niah import NiahConfig, draw_niah

    haystack = rng.choice(["noise", "essay", "needle"])
    value_type = rng.choice(["numbers", "numbers", "numbers", "uuids"])
    key_type = rng.choice(["words", "words", "numbers", "uuids"] if haystack != "needle" else
                          ["words", "words", "uuids"])
    several = rng.random() < 0.4
    config = NiahConfig(haystack, key_type, value_type, num_keys=rng.randint(2, 4) if several else 1,
                        num_values=rng.randint(2, 4) if rng.random() < 0.15 else 1,
                        num_queries=rng.randint(2, 4) if rng.random() < 0.15 else 1)
    needles = config.keys_inserted * config.num_values
    per_needle = TOKENS_PER_UNIT["needle_uuids"] if "uuids" in (key_type, value_type) else TOKENS_PER_UNIT["needle"]
    reserved = PROMPT_TOKENS + needles * per_needle + 20 * config.num_queries * config.num_values
    unit = {"noise": TOKENS_PER_UNIT["noise"], "essay": TOKENS_PER_UNIT["essay"], "needle": per_needle}[haystack]
    size = units_up_to(length, unit, rng, reserved)
    size = max(size, needles * (4 if haystack == "essay" else 1))  # room for the needles: RULER's inserter needs it
    essays = EssaySpan(essay_sentences, rng) if haystack == "essay" else None
    prompt, prefix, outputs = draw_niah(config, size, rng, seed=rng.getrandbits(32), essays=essays)
    return f"{prompt}{prefix} {', '.join(outputs)}."


def phonebook_sample(rng: random.Random, length: int) -> str:
    from path_eval.tasks.phonebook import build_prompt, draw_entry

    entries = [draw_entry(rng) for _ in range(max(3, units_up_to(length, TOKENS_PER_UNIT["entry"], rng, 60)))]
    prompt, answer = build_prompt(entries, rng.sample(range(len(entries)), 3))
    return f"{prompt} {answer}"


def vt_sample(rng: random.Random, length: int) -> str:
    from path_eval.tasks.ruler.variable_tracking import NUM_HOPS, draw_chain

    np_rng = np.random.RandomState(rng.getrandbits(32))
    example = ""
    if rng.random() < 0.5:  # RULER puts one solved chain before the question
        prompt, prefix, names = draw_chain(rng.randint(NUM_HOPS + 1, 12), rng, np_rng, letters=3)
        example = f"{prompt}{prefix} {' '.join(names)}\n"  # RULER's example has this space after the prefix
    reserved = PROMPT_TOKENS + (len(example) // 3 if example else 0)
    prompt, prefix, names = draw_chain(max(NUM_HOPS + 1, units_up_to(length, TOKENS_PER_UNIT["noise"], rng, reserved)),
                                       rng, np_rng)
    return f"{example}{prompt}{prefix}{' '.join(names)}"  # the prefix ends with a space


def flipflop_sample(rng: random.Random, length: int) -> str:
    from path_eval.tasks import flipflop

    pairs = rng.randint(16, max(17, length // 4 - 8))
    return flipflop.to_text(flipflop.generate(1, flipflop.SPLITS["in"], length=2 * pairs, seed=rng.getrandbits(63))[0])


SYNTHETIC_KINDS = {"niah": lambda rng, essays, length: niah_sample(rng, essays, length),
                   "phonebook": lambda rng, essays, length: phonebook_sample(rng, length),
                   "vt": lambda rng, essays, length: vt_sample(rng, length),
                   "flipflop": lambda rng, essays, length: flipflop_sample(rng, length)}


def sentences(texts: list[str]) -> list[str]:
    return [s for text in texts for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def synthetic_chunk(kind: str, chunk: int, count: int, seed: int, essay_sentences: list[str],
                    length: int = TRAINING_LENGTH) -> list[str]:
    """Samples `chunk * SYNTHETIC_CHUNK` onwards of one kind, `count` of them: each chunk has a
    generator of its own, so the samples do not depend on how many processes draw them."""
    rng = random.Random(SYNTHETIC_SEED_DOMAIN + 1_000_003 * seed + 1000 * chunk + list(MIXTURE).index(kind))
    return [SYNTHETIC_KINDS[kind](rng, essay_sentences, length) for _ in range(count)]


def synthetic_samples(kind: str, count: int, seed: int, essay_sentences: list[str],
                      length: int = TRAINING_LENGTH, pool: ProcessPoolExecutor | None = None) -> list[str]:
    """`count` samples of one kind, drawn chunk by chunk (in `pool` when given)."""
    chunks = [(index, min(SYNTHETIC_CHUNK, count - start)) for index, start in
              enumerate(range(0, count, SYNTHETIC_CHUNK))]
    args = ([kind] * len(chunks), [c for c, _ in chunks], [n for _, n in chunks], [seed] * len(chunks),
            [essay_sentences] * len(chunks), [length] * len(chunks))
    drawn = pool.map(synthetic_chunk, *args) if pool else map(synthetic_chunk, *args)
    return [sample for part in drawn for sample in part]


def tokenizer_training_text(data_dir: Path, code_dir: Path, samples_per_kind: int = 2000) -> list[str]:
    """The real training documents the zoo's tokenizer was trained on (books, essays, bAbI, code: it
    predates the prose) plus a few thousand synthetic samples of each kind."""
    documents = real_documents(data_dir, code_dir, text_dir=None)
    texts = [doc for source in documents.values() for doc in source]
    essay_sentences = sentences(documents["essays"])
    for kind in SYNTHETIC_KINDS:
        texts += synthetic_samples(kind, samples_per_kind, seed=-1, essay_sentences=essay_sentences)
    return texts


# --- the token stream -----------------------------------------------------------------------------

def source_windows(tokenizer, documents: list[str], window: int) -> np.ndarray:
    """A source's documents as <s> doc </s> ..., cut into non-overlapping windows."""
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    ids = [t for enc in tokenizer.encode_batch(documents) for t in [bos, *enc.ids, eos]]
    count = len(ids) // window
    return np.asarray(ids[:count * window], dtype=np.uint16).reshape(count, window)


OPEN_WINDOWS = 16  # windows a sample may still be packed into


def packed_windows(tokenizer, samples: list[str], window: int) -> np.ndarray:
    """Whole samples (<s> sample </s>), each into the first of the last OPEN_WINDOWS windows with room
    for it (else a new one), the rest <pad> (no loss); a sample longer than a window is left out
    (its answer would be cut off)."""
    bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    windows: list[list[int]] = []
    for enc in tokenizer.encode_batch(samples):
        ids = [bos, *enc.ids, eos]
        if len(ids) > window:
            continue
        for current in windows[-OPEN_WINDOWS:]:
            if len(current) + len(ids) <= window:
                current += ids
                break
        else:
            windows.append(ids)
    return np.asarray([current + [pad] * (window - len(current)) for current in windows], dtype=np.uint16)


def build_stream(tokenizer, data_dir: Path, code_dir: Path, text_dir: Path | None, windows: int, seed: int = 0,
                 length: int = TRAINING_LENGTH) -> tuple[np.ndarray, dict]:
    """`windows` training windows [windows, length + 1] in the MIXTURE's shares, shuffled with
    `seed`; windows repeat (cycling through a seeded permutation) when a share needs more than exist."""
    documents = real_documents(data_dir, code_dir, text_dir)
    if not documents["prose"]:
        raise PathEvalError("no prose: give --text-dir the folder `python -m training.text_sources` fetched")
    essay_sentences = sentences(documents["essays"])
    window = length + 1  # the training length plus the shifted target
    rng = np.random.Generator(np.random.PCG64(seed))
    needs = {source: round(share * windows) for source, share in MIXTURE.items()}
    with ProcessPoolExecutor() as pool:
        samples = {kind: synthetic_samples(kind, int(min(needs[kind], SYNTHETIC_UNIQUE_WINDOWS) * SAMPLES_PER_WINDOW) + 8,
                                           seed, essay_sentences, length, pool) for kind in SYNTHETIC_KINDS}
    parts, stats = [], {}
    for source, need in needs.items():
        if source in REAL_SOURCES:
            unique = source_windows(tokenizer, documents[source], window)
        else:
            unique = packed_windows(tokenizer, samples[source], window)
        order = np.concatenate([rng.permutation(len(unique)) for _ in range(-(-need // len(unique)))])[:need]
        parts.append(unique[order])
        stats[source] = {"windows": need, "unique_windows": len(unique), "epochs": round(need / len(unique), 2)}
        if source not in REAL_SOURCES:
            stats[source]["samples"] = len(samples[source])
            stats[source]["padding"] = round(float((unique == tokenizer.token_to_id("<pad>")).mean()), 4)
    stream = np.concatenate(parts)
    stream = stream[rng.permutation(len(stream))]
    return stream, stats


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True, help="the shared data folder (gutenberg_books, babi, ...)")
    parser.add_argument("--code-dir", required=True, help="a Python standard library folder (the code source)")
    parser.add_argument("--text-dir", help="the prose folder `python -m training.text_sources` fetched")


def main() -> None:
    from tokenizers import Tokenizer

    parser = argparse.ArgumentParser(description="Build the zoo's training windows (a .npy of uint16).")
    add_source_arguments(parser)
    parser.add_argument("--tokenizer", required=True, help="folder holding the zoo's tokenizer.json")
    parser.add_argument("--windows", type=int, required=True, help="number of training windows")
    parser.add_argument("--length", type=int, default=TRAINING_LENGTH, help="the training length in tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(Path(args.tokenizer) / "tokenizer.json"))
    stream, stats = build_stream(tokenizer, Path(args.data_dir), Path(args.code_dir),
                                 Path(args.text_dir) if args.text_dir else None, args.windows, args.seed, args.length)
    partial = Path(args.out).with_suffix(".partial.npy")  # renamed when whole: trainers wait for the name
    np.save(partial, stream)
    partial.rename(args.out)
    digest = hashlib.sha256(stream.tobytes()).hexdigest()
    print(json.dumps({"out": args.out, "shape": list(stream.shape), "sha256": digest, "sources": stats}))


if __name__ == "__main__":
    run_cli(main)
