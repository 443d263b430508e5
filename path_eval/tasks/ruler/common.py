"""What every RULER generator shares: the sample record, token counting with the model's
tokenizer, and the search for the largest task size that fits a length budget."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Protocol, TypeVar

from path_eval.errors import PathEvalError


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


@dataclass
class RulerSample:
    """One frozen sample. `input` is the prompt without the answer prefix (as NVIDIA's prepared
    jsonl); the model is given `input + answer_prefix` and generates up to `max_new_tokens`.
    `length` counts the prompt's tokens (answer prefix included) plus `max_new_tokens`."""

    index: int
    input: str
    outputs: list[str]
    answer_prefix: str
    max_new_tokens: int
    length: int
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def unwrapped(text: str) -> str:
    """A base model's prompt layout: the task's text as is. A chat model's (`models.chat_template.
    UserTurn`) puts the text in the user turn, up to the assistant's header; the generators count,
    and store as `input`, the text so laid out, the answer prefix after it (RULER's prepare.py formats
    the model template around the task template before generating, so its counts include it)."""
    return text


def count_tokens(tokenizer: Tokenizer, text: str) -> int:
    """Tokens of `text` as the model reads it (no BOS, as NVIDIA's `text_to_tokens`)."""
    return len(tokenizer.encode(text, add_special_tokens=False))


def largest_fitting(fits: Callable[[int], bool], lower: int, upper: int) -> int:
    """The largest size in [lower, upper] for which `fits(size)` holds, by binary search (fits is
    monotone: a larger haystack never takes fewer tokens). Returns lower - 1 if none fits."""
    best = lower - 1
    while lower <= upper:
        middle = (lower + upper) // 2
        if fits(middle):
            best, lower = middle, middle + 1
        else:
            upper = middle - 1
    return best


Drawn = TypeVar("Drawn")


def searched_size(fits: Callable[[int], bool], step: int, upper: int) -> int:
    """NVIDIA's haystack size: the largest in [step, upper] that fits (each probe a fresh random
    draw, as the original), or `step` where none does (the original's fallback)."""
    return max(largest_fitting(fits, step, upper), step)


def first_fitting(draw: Callable[[int], Drawn], tokens_of: Callable[[Drawn], int], size: int, step: int,
                  budget: int) -> tuple[Drawn, int, int]:
    """NVIDIA's per-sample loop: draw at `size` and, while the prompt has more than `budget` tokens,
    draw afresh `step` units smaller. Returns (draw, its tokens, its size). Where even `step` units
    do not fit, the original loops forever."""
    while True:
        drawn = draw(size)
        tokens = tokens_of(drawn)
        if tokens <= budget:
            return drawn, tokens, size
        if size <= step:
            raise PathEvalError(f"even the smallest RULER haystack ({size} units) gives a {tokens}-token prompt, more "
                                f"than the {budget} the length leaves after generation: choose a longer length")
        size -= step


def fitted_samples(draw: Callable[[int], tuple[str, str, list[str]]], prompt_tokens: Callable[[Drawn], int],
                   size: int, step: int, budget: int, num_samples: int, tokens_to_generate: int) -> list[RulerSample]:
    """`num_samples` draws of (prompt, answer prefix, answers), each fitted by `first_fitting`."""
    samples = []
    for index in range(num_samples):
        (prompt, prefix, answers), tokens, used = first_fitting(draw, prompt_tokens, size, step, budget)
        samples.append(RulerSample(index=index, input=prompt, outputs=answers, answer_prefix=prefix,
                                   max_new_tokens=tokens_to_generate, length=tokens + tokens_to_generate,
                                   extra={"haystack_size": used}))
    return samples


def prompt_counter(tokenizer: Tokenizer) -> Callable[[tuple[str, str, list[str]]], int]:
    """Tokens of a drawn prompt with its answer prefix, as the original counts them."""
    return lambda drawn: count_tokens(tokenizer, drawn[0] + drawn[1])
