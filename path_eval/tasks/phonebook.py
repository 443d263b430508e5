"""PhoneBook (Jelassi et al. 2024, "Repeat After Me"), as microsoft/ArchScale's eval_phonebook.py
runs it: a book of "{name}: {number}" lines, two of its entries repeated as examples, then one
name whose number the model must copy.

The generative process is ArchScale's `PhoneBookDataset.rand_num` (same as sjelassi/
transformers_ssm_copy pretrained_exps/data_utils.py), drawn in the same order from our own
`random.Random(seed)`: for one seed and the same entry counts our prompts are byte for byte the
ones the original builds after `random.seed(seed)`. Per entry: `names.get_full_name()` (gender
uniform, then first and last name by the census cumulative percentages), a first digit in 6-9
and nine digits in 0-9; then `sample(range(count), 3)` picks the two examples and the queried
entry (three distinct entries). Names are not made unique, as in the original. The samples of
one call continue one stream, as the samples of one ArchScale batch do.

The original fixes the entry count; here each sample gets the largest count whose prompt plus
`max_new_tokens` fits `length` tokens of the model's tokenizer (DESIGN.md §4.3).
"""
from __future__ import annotations

import bisect
import functools
import importlib.resources
import random
from collections import deque
from dataclasses import dataclass
from typing import Callable

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.common import Tokenizer, unwrapped

# The prompt layout, from microsoft/ArchScale eval_phonebook.py (`rand_num`, default branch:
# neither jrt, sandwitch nor verbose): entries joined by "\n", "\n\n", two example entries
# joined by "\n", "\n\n", then the queried name and ":" (no space, no trailing newline).
ENTRY_TEMPLATE = "{name}: {number}"
PROMPT_TEMPLATE = "{book}\n\n{first_example}\n{second_example}\n\n{query_name}:"
# ArchScale generates to `max_length = prompt + 20` (the Jelassi repository used 50).
DEFAULT_MAX_NEW_TOKENS = 20

# The `names` package's census lists and its draw: `random.random() * 90` against the cumulative
# percentages (third column); the first line whose cumulative value exceeds it wins.
CENSUS_FILES = {"male": "dist.male.first", "female": "dist.female.first", "last": "dist.all.last"}
GENDERS = ("male", "female")
CENSUS_SCALE = 90
FIRST_DIGITS = (6, 9)
OTHER_DIGITS = 9
EXAMPLES_AND_QUERY = 3
# Random states kept for the most recent entry counts: the count finally chosen lies a few
# entries (the examples' and query's tokens) below the first count whose book alone overflows.
STATE_WINDOW = 64
# Every line but the last ends with a digit: a line's tokens are counted after this stand-in.
NUMBER_END = "0"


@dataclass(frozen=True)
class CensusList:
    names: tuple[str, ...]
    cumulative: tuple[float, ...]

    def draw(self, rng: random.Random) -> str:
        return self.names[bisect.bisect_right(self.cumulative, rng.random() * CENSUS_SCALE)]


@functools.cache
def census_lists() -> dict[str, CensusList]:
    """The three lists as `names.get_name` reads them: names capitalized as `str.capitalize` does."""
    folder = importlib.resources.files("names")
    lists = {}
    for key, filename in CENSUS_FILES.items():
        rows = [line.split() for line in (folder / filename).read_text().splitlines()]
        lists[key] = CensusList(tuple(row[0].capitalize() for row in rows), tuple(float(row[2]) for row in rows))
    return lists


def draw_entry(rng: random.Random) -> tuple[str, str]:
    """One (full name, number), consuming `rng` exactly as `names.get_full_name()` and
    ArchScale's `rand_phone()` consume the global random module."""
    census = census_lists()
    gender = rng.choice(GENDERS)
    name = f"{census[gender].draw(rng)} {census['last'].draw(rng)}"
    digits = [rng.randint(*FIRST_DIGITS)] + [rng.randint(0, 9) for _ in range(OTHER_DIGITS)]
    return name, "".join(map(str, digits))


def build_prompt(entries: list[tuple[str, str]], picks: list[int]) -> tuple[str, str]:
    """(prompt, answer) for a book and the original's three picks: two examples, then the query."""
    lines = [ENTRY_TEMPLATE.format(name=name, number=number) for name, number in entries]
    first_example, second_example, query = picks
    prompt = PROMPT_TEMPLATE.format(book="\n".join(lines), first_example=lines[first_example],
                                    second_example=lines[second_example], query_name=entries[query][0])
    return prompt, entries[query][1]


class _GrowingBook:
    """Entries drawn one at a time from the sample's stream, with an estimate of the book's tokens
    and the stream's state after each recent count, so any recent count can be finished as the
    original would have finished it (its picks come from the stream right after its entries)."""

    def __init__(self, rng: random.Random, tokenizer: Tokenizer):
        self.rng = rng
        self.tokenizer = tokenizer
        self.entries: list[tuple[str, str]] = []
        self.book_tokens = 0
        self.number_end_tokens = self.count_tokens(NUMBER_END)
        self.states: deque[tuple] = deque(maxlen=STATE_WINDOW)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def grow(self) -> None:
        """Add an entry and count its tokens once, as the line reads inside the book: after the
        newline that follows a number (a tokenizer may mark word starts or merge across lines)."""
        entry = draw_entry(self.rng)
        line = ENTRY_TEMPLATE.format(name=entry[0], number=entry[1])
        if self.entries:
            self.book_tokens += self.count_tokens(f"{NUMBER_END}\n{line}") - self.number_end_tokens
        else:
            self.book_tokens = self.count_tokens(line)
        self.entries.append(entry)
        self.states.append(self.rng.getstate())

    def state_after(self, count: int) -> tuple:
        oldest = len(self.entries) - len(self.states) + 1
        if count < oldest:
            raise RuntimeError(f"PhoneBook: the fitting entry count fell more than {STATE_WINDOW} entries below "
                               "the book's overflow point: the tokenizer counts prompts very unevenly")
        return self.states[count - oldest]

    def finish(self, count: int, rng: random.Random) -> tuple[str, str]:
        """The original's prompt for the first `count` entries; `rng` is left where the original's
        stream stands after this sample."""
        rng.setstate(self.state_after(count))
        return build_prompt(self.entries[:count], rng.sample(range(count), EXAMPLES_AND_QUERY))


def _fitted_sample(rng: random.Random, tokenizer: Tokenizer, budget: int,
                   layout: Callable[[str], str]) -> tuple[str, str, int, int]:
    """(prompt laid out by `layout`, answer, entry count, prompt tokens) with the largest count whose
    laid-out prompt has at most `budget` tokens. The book alone is counted incrementally until it
    overflows; from there exact counts of whole prompts step down to the largest fitting count, so
    that count fits and one more entry does not (the step up covers a tokenizer that the incremental
    count overestimates)."""
    book = _GrowingBook(rng, tokenizer)
    scratch = random.Random()

    def exact_tokens(count: int) -> int:
        return book.count_tokens(layout(book.finish(count, scratch)[0]))

    while len(book.entries) < EXAMPLES_AND_QUERY or book.book_tokens <= budget:
        book.grow()
    while exact_tokens(len(book.entries)) <= budget:
        book.grow()
    for count in range(len(book.entries) - 1, EXAMPLES_AND_QUERY - 1, -1):
        tokens = exact_tokens(count)
        if tokens <= budget:
            prompt, answer = book.finish(count, rng)
            return layout(prompt), answer, count, tokens
    raise PathEvalError(f"PhoneBook: a book of {EXAMPLES_AND_QUERY} entries does not fit in {budget} prompt tokens: "
                        "choose a longer length")


def generate_phonebook(length: int, tokenizer: Tokenizer, seed: int, num_samples: int,
                       max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                       layout: Callable[[str], str] = unwrapped) -> list[dict]:
    """`num_samples` prompts of at most `length - max_new_tokens` tokens (no BOS; laid out by `layout`:
    a chat model's in the user turn, up to the assistant's header), one stream
    `random.Random(seed)` for all of them. `length` in each record counts the prompt's tokens plus
    `max_new_tokens` (as RULER's records do), so it is at most the requested length."""
    rng = random.Random(seed)
    samples = []
    for index in range(num_samples):
        prompt, answer, count, tokens = _fitted_sample(rng, tokenizer, length - max_new_tokens, layout)
        samples.append({"index": index, "input": prompt, "answer": answer, "num_entries": count,
                        "length": tokens + max_new_tokens, "max_new_tokens": max_new_tokens})
    return samples
