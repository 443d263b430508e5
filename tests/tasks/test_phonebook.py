"""PhoneBook against its definition: microsoft/ArchScale eval_phonebook.py (`PhoneBookDataset.rand_num`
and the scoring in `phone_book_evaluation`), replayed here with the `names` package itself and the
global random module exactly as the original calls them, and the real Mistral v1 tokenizer."""
from __future__ import annotations

import random
import re
from contextlib import contextmanager
from importlib import resources

import names
import pytest

from tests.helpers import tokens
from path_eval.errors import PathEvalError
from path_eval.tasks.phonebook import generate_phonebook

SEED = 3
NEW_TOKENS = 20  # ArchScale: max_length = prompt length + 20
ENTRY = r"[A-Z][a-z]+ [A-Z][a-z]+: [6-9][0-9]{9}"
PROMPT = re.compile(rf"((?:{ENTRY}\n)*{ENTRY})\n\n({ENTRY})\n({ENTRY})\n\n([A-Z][a-z]+ [A-Z][a-z]+):")


@contextmanager
def seeded_global_random(seed: int):
    """The original draws from the global random module after `random.seed(seed)`."""
    saved = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(saved)


def original_sample(count: int) -> tuple[str, str]:
    """ArchScale's `rand_num(count)` in its default branch (no jrt, sandwich or verbose prompt)."""
    book = []
    for _ in range(count):
        name = names.get_full_name()
        number = str(random.randint(6, 9)) + "".join(str(random.randint(0, 9)) for _ in range(9))
        book.append(name + ": " + number)
    picks = random.sample(list(range(len(book))), 3)
    prompt = "\n".join(book) + "\n\n" + book[picks[0]] + "\n" + book[picks[1]] + "\n\n"
    prompt += book[picks[2]].split(":")[0] + ":"
    return prompt, book[picks[2]].split(":")[1].strip()


def original_batch(seed: int, counts: list[int]) -> list[tuple[str, str]]:
    """One ArchScale batch: its samples follow each other in one seeded stream."""
    with seeded_global_random(seed):
        return [original_sample(count) for count in counts]


def census_names(filename: str) -> set[str]:
    text = (resources.files("names") / filename).read_text()
    return {line.split()[0].capitalize() for line in text.splitlines()}


@pytest.fixture(scope="module")
def samples_by_length(tokenizer):
    return {length: generate_phonebook(length, tokenizer, seed=SEED, num_samples=4) for length in (1024, 2048)}


def test_samples_are_the_originals_prompts_for_the_same_seed_and_counts(samples_by_length):
    for samples in samples_by_length.values():
        expected = original_batch(SEED, [s["num_entries"] for s in samples])
        assert [(s["input"], s["answer"]) for s in samples] == expected


def test_prompt_structure(samples_by_length):
    first_names = census_names("dist.male.first") | census_names("dist.female.first")
    last_names = census_names("dist.all.last")
    for samples in samples_by_length.values():
        for index, sample in enumerate(samples):
            assert sample["index"] == index
            assert sample["max_new_tokens"] == NEW_TOKENS
            match = PROMPT.fullmatch(sample["input"])
            assert match, sample["input"][-300:]
            book, first_example, second_example, query_name = match.groups()
            entries = book.split("\n")
            assert len(entries) == sample["num_entries"]
            assert first_example in entries and second_example in entries and first_example != second_example
            queried = f"{query_name}: {sample['answer']}"
            assert queried in entries and queried not in (first_example, second_example)
            assert re.fullmatch(r"[6-9][0-9]{9}", sample["answer"])
            for entry in entries:
                first, last = entry.split(":")[0].split(" ")
                assert first in first_names and last in last_names


def test_entry_count_is_the_largest_that_fits(tokenizer, samples_by_length):
    for length, samples in samples_by_length.items():
        counts = [s["num_entries"] for s in samples]
        for index, sample in enumerate(samples):
            prompt = tokens(tokenizer, sample["input"])
            assert sample["length"] == prompt + NEW_TOKENS <= length
            one_more, _ = original_batch(SEED, counts[:index] + [counts[index] + 1])[-1]
            assert tokens(tokenizer, one_more) + NEW_TOKENS > length


def test_same_seed_same_bytes_other_seed_other_samples(tokenizer, samples_by_length):
    again = generate_phonebook(1024, tokenizer, seed=SEED, num_samples=4)
    assert again == samples_by_length[1024]
    inputs = [s["input"] for s in again]
    assert len(set(inputs)) == len(inputs)
    other = generate_phonebook(1024, tokenizer, seed=SEED + 1, num_samples=4)
    assert not set(inputs) & {s["input"] for s in other}


def test_a_length_too_small_for_three_entries_is_refused(tokenizer):
    with pytest.raises(PathEvalError, match="longer length"):
        generate_phonebook(60, tokenizer, seed=0, num_samples=1)
