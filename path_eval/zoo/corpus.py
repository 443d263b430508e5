"""The zoo's training mixture, offline and seeded: real text plus synthetic retrieval and
state-tracking sequences, cut into windows of the training length.

Real text (from the shared data folder and a copy of the Python standard library):
  books   the Gutenberg books, headers stripped, less the held-out tail of Jack Sheppard
  essays  the Paul Graham essays
  babi    the bAbI en-10k *train* files (never the test files)
  code    the standard library's .py files, tests and GUI packages excluded
Synthetic, each sample whole inside one window (RULER's and PhoneBook's own templates, drawn from
a seed domain of their own, so no evaluation sample is reproduced):
  niah      key-value needles ("One of the special magic numbers for ... is: ...") in noise or
            essay sentences, then RULER's question, answer prefix and the value
  phonebook "Name: number" lines, two examples and a query, then the number
  vt        RULER's variable-tracking chains in noise lines, then the chain's names
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
from path_eval.zoo import run_cli

WINDOW = 512 + 1  # the training length plus the shifted target
HELDOUT_BOOK = "gutenberg_books/pg16215_jack_sheppard.txt"
HELDOUT_CHARS = 150_000
HELDOUT_FILE = Path(__file__).parent / "heldout" / "jack_sheppard_tail.txt"
BABI_TRAIN = "babi/tasks_1-20_v1-2/en-10k"
ESSAYS = "paul_graham_essays/PaulGrahamEssays"
CODE_EXCLUDED = ("test", "tests", "idlelib", "tkinter", "lib2to3", "turtledemo", "site-packages", "ensurepip")
# Share of the training windows from each source.
# The real text is small (about 5.4M tokens: books 0.38M, essays 0.2M, bAbI 1.7M, code 3.1M), so
# the books and essays repeat most; synthetic samples are drawn afresh up to SYNTHETIC_UNIQUE_WINDOWS.
MIXTURE = {"books": 0.12, "essays": 0.06, "babi": 0.12, "code": 0.30,
           "niah": 0.14, "phonebook": 0.12, "vt": 0.07, "flipflop": 0.07}
SYNTHETIC_SEED_DOMAIN = 7_000_000  # far from the evaluation tasks' seeds
SYNTHETIC_UNIQUE_WINDOWS = 12_000  # per kind: more windows than this repeat (drawing is ~1 ms a sample)


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


def real_documents(data_dir: Path, code_dir: Path) -> dict[str, list[str]]:
    """Each real source's documents, in a fixed order."""
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
    return {"books": books, "essays": essays, "babi": babi, "code": code}


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

def niah_sample(rng: random.Random, essay_sentences: list[str]) -> str:
    from path_eval.tasks.ruler.niah import SINGULAR_REPLACEMENTS, random_needle_part
    from path_eval.tasks.ruler.templates import NIAH, NIAH_NEEDLE, NOISE_HAYSTACK

    key_type = rng.choice(["words", "numbers"])
    keys = list(dict.fromkeys(random_needle_part(key_type, rng) for _ in range(rng.randint(1, 4))))
    values = [random_needle_part("numbers", rng) for _ in keys]
    if rng.random() < 0.5:
        haystack = [NOISE_HAYSTACK] * rng.randint(3, 12)
    else:
        start = rng.randrange(len(essay_sentences) - 40)
        haystack = essay_sentences[start:start + rng.randint(4, 16)]
    for key, value in zip(keys, values):
        haystack.insert(rng.randint(0, len(haystack)), NIAH_NEEDLE.format(type_needle_v="numbers", key=key, value=value))
    asked = rng.randrange(len(keys))
    template, prefix = NIAH.template, NIAH.answer_prefix
    for old, new in SINGULAR_REPLACEMENTS:
        template, prefix = template.replace(old, new), prefix.replace(old, new)
    fields = {"type_needle_v": "number", "query": keys[asked], "context": " ".join(haystack)}
    return template.format(**fields) + prefix.format(**fields) + f" {values[asked]}."


def phonebook_sample(rng: random.Random) -> str:
    from path_eval.tasks.phonebook import build_prompt, draw_entry

    entries = [draw_entry(rng) for _ in range(rng.randint(6, 24))]
    prompt, answer = build_prompt(entries, [rng.randrange(len(entries)) for _ in range(3)])
    return f"{prompt} {answer}"


def vt_sample(rng: random.Random) -> str:
    from path_eval.tasks.ruler.templates import NOISE_HAYSTACK, VARIABLE_TRACKING

    names = list(dict.fromkeys("".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=5)) for _ in range(rng.randint(2, 5))))
    value = str(rng.randint(10000, 99999))
    statements = [f"VAR {names[0]} = {value}"] + [f"VAR {new} = VAR {old} " for old, new in zip(names, names[1:])]
    lines = [NOISE_HAYSTACK] * rng.randint(len(statements), 10)
    for offset, position in enumerate(sorted(rng.sample(range(len(lines)), len(statements)))):
        lines.insert(position + offset, statements[offset])
    prompt = VARIABLE_TRACKING.template.format(context="\n".join(lines), query=value)
    return prompt + VARIABLE_TRACKING.answer_prefix.format(num_v=len(names), query=value) + " ".join(names)


def flipflop_sample(rng: random.Random) -> str:
    from path_eval.tasks import flipflop

    pairs = rng.randint(16, 120)
    return flipflop.to_text(flipflop.generate(1, flipflop.SPLITS["in"], length=2 * pairs, seed=rng.getrandbits(63))[0])


def sentences(texts: list[str]) -> list[str]:
    return [s for text in texts for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def synthetic_samples(kind: str, count: int, seed: int, essay_sentences: list[str]):
    rng = random.Random(SYNTHETIC_SEED_DOMAIN + 1000 * seed + list(MIXTURE).index(kind))
    draw = {"niah": lambda: niah_sample(rng, essay_sentences), "phonebook": lambda: phonebook_sample(rng),
            "vt": lambda: vt_sample(rng), "flipflop": lambda: flipflop_sample(rng)}[kind]
    return [draw() for _ in range(count)]


def tokenizer_training_text(data_dir: Path, code_dir: Path, samples_per_kind: int = 2000) -> list[str]:
    """Every real training document plus a few thousand synthetic samples of each kind."""
    documents = real_documents(data_dir, code_dir)
    texts = [doc for source in documents.values() for doc in source]
    essay_sentences = sentences(documents["essays"])
    for kind in ("niah", "phonebook", "vt", "flipflop"):
        texts += synthetic_samples(kind, samples_per_kind, seed=-1, essay_sentences=essay_sentences)
    return texts


# --- the token stream -----------------------------------------------------------------------------

def source_windows(tokenizer, documents: list[str]) -> np.ndarray:
    """A source's documents as <s> doc </s> ..., cut into non-overlapping windows."""
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    ids = [t for enc in tokenizer.encode_batch(documents) for t in [bos, *enc.ids, eos]]
    count = len(ids) // WINDOW
    return np.asarray(ids[:count * WINDOW], dtype=np.uint16).reshape(count, WINDOW)


def packed_windows(tokenizer, samples: list[str]) -> np.ndarray:
    """Whole samples (<s> sample </s>) packed greedily into windows, the rest <pad> (no loss); a
    sample longer than a window is left out (its answer would be cut off)."""
    bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    windows, current = [], []
    for enc in tokenizer.encode_batch(samples):
        ids = [bos, *enc.ids, eos]
        if len(ids) > WINDOW:
            continue
        if len(current) + len(ids) > WINDOW:
            windows.append(current + [pad] * (WINDOW - len(current)))
            current = []
        current += ids
    if current:
        windows.append(current + [pad] * (WINDOW - len(current)))
    return np.asarray(windows, dtype=np.uint16)


def build_stream(tokenizer, data_dir: Path, code_dir: Path, windows: int, seed: int = 0) -> tuple[np.ndarray, dict]:
    """`windows` training windows [windows, WINDOW] in the MIXTURE's shares, shuffled with `seed`;
    real windows repeat (cycling through a seeded permutation) when a share needs more than exist."""
    documents = real_documents(data_dir, code_dir)
    essay_sentences = sentences(documents["essays"])
    rng = np.random.Generator(np.random.PCG64(seed))
    needs = {source: round(share * windows) for source, share in MIXTURE.items()}
    synthetic = [source for source in MIXTURE if source not in documents]
    with ProcessPoolExecutor(len(synthetic)) as pool:  # about 1.6 samples a window
        drawn = pool.map(synthetic_samples, synthetic,
                         [int(min(needs[s], SYNTHETIC_UNIQUE_WINDOWS) * 1.6) + 8 for s in synthetic],
                         [seed] * len(synthetic), [essay_sentences] * len(synthetic))
        samples = dict(zip(synthetic, drawn))
    parts, stats = [], {}
    for source, need in needs.items():
        if source in documents:
            unique = source_windows(tokenizer, documents[source])
        else:
            unique = packed_windows(tokenizer, samples[source])
        order = np.concatenate([rng.permutation(len(unique)) for _ in range(-(-need // len(unique)))])[:need]
        parts.append(unique[order])
        stats[source] = {"windows": need, "unique_windows": len(unique), "epochs": round(need / len(unique), 2)}
    stream = np.concatenate(parts)
    stream = stream[rng.permutation(len(stream))]
    return stream, stats


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True, help="the shared data folder (gutenberg_books, babi, ...)")
    parser.add_argument("--code-dir", required=True, help="a Python standard library folder (the code source)")


def main() -> None:
    from tokenizers import Tokenizer

    parser = argparse.ArgumentParser(description="Build the zoo's training windows (a .npy of uint16).")
    add_source_arguments(parser)
    parser.add_argument("--tokenizer", required=True, help="folder holding the zoo's tokenizer.json")
    parser.add_argument("--windows", type=int, required=True, help="number of training windows of 513 tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(Path(args.tokenizer) / "tokenizer.json"))
    stream, stats = build_stream(tokenizer, Path(args.data_dir), Path(args.code_dir), args.windows, args.seed)
    np.save(args.out, stream)
    digest = hashlib.sha256(stream.tobytes()).hexdigest()
    print(json.dumps({"out": args.out, "shape": list(stream.shape), "sha256": digest, "sources": stats}))


if __name__ == "__main__":
    run_cli(main)
