"""RULER's prompt data, kept in one place: the task templates, answer prefixes and generation
budgets of the 13 tasks, plus the fixed strings the NIAH and variable-tracking generators build
their haystacks from. These strings define the benchmark: they are reproduced byte for byte
from NVIDIA/RULER (scripts/data/synthetic/constants.py unless another file is named), never
paraphrased.

RULER builds a prompt as base model template ("{task_template}", scripts/data/template.py) +
task template + answer prefix; the model generates after the answer prefix.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskTemplate:
    """One RULER task family's prompt: `template` holds {context} and {query} (plus family
    specific fields), `answer_prefix` is appended to it, `tokens_to_generate` is the budget."""

    template: str
    answer_prefix: str
    tokens_to_generate: int

    @property
    def full(self) -> str:
        """Template with the answer prefix appended, as RULER's prepare.py passes it on."""
        return self.template + self.answer_prefix


# NVIDIA/RULER scripts/data/synthetic/constants.py, TASKS['niah'].
NIAH = TaskTemplate(
    template=(
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the {type_needle_v} afterwards.\n{context}\n"
        "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
    ),
    answer_prefix=" The special magic {type_needle_v} for {query} mentioned in the provided text are",
    tokens_to_generate=128,
)

# NVIDIA/RULER scripts/data/synthetic/constants.py, TASKS['variable_tracking'].
VARIABLE_TRACKING = TaskTemplate(
    template=(
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
        "Question: Find all variables that are assigned the value {query} in the text above."
    ),
    answer_prefix=(
        " Answer: According to the chain(s) of variable assignment in the text above, "
        "{num_v} variables are assigned the value {query}, they are: "
    ),
    tokens_to_generate=30,
)

# NVIDIA/RULER scripts/data/synthetic/constants.py, TASKS['common_words_extraction'].
COMMON_WORDS_EXTRACTION = TaskTemplate(
    template=(
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n{context}\n"
        "Question: What are the 10 most common words in the above list?"
    ),
    answer_prefix=" Answer: The top 10 words that appear most often in the list are:",
    tokens_to_generate=120,
)

# NVIDIA/RULER scripts/data/synthetic/constants.py, TASKS['freq_words_extraction'].
FREQ_WORDS_EXTRACTION = TaskTemplate(
    template=(
        "Read the following coded text and track the frequency of each coded word. "
        "Find the three most frequently appeared coded words. {context}\n"
        "Question: Do not provide any explanation. Please ignore the dots '....'. "
        "What are the three most frequently appeared words in the above coded text?"
    ),
    answer_prefix=" Answer: According to the coded text above, the three most frequently appeared words are:",
    tokens_to_generate=50,
)

# NVIDIA/RULER scripts/data/synthetic/constants.py, TASKS['qa'].
QA = TaskTemplate(
    template=(
        "Answer the question based on the given documents. Only give me the answer and do not output any "
        "other words.\n\nThe following are given documents.\n\n{context}\n\n"
        "Answer the question based on the given documents. Only give me the answer and do not output any "
        "other words.\n\nQuestion: {query}"
    ),
    answer_prefix=" Answer:",
    tokens_to_generate=32,
)

# NVIDIA/RULER scripts/data/synthetic/niah.py: the needle, and the noise haystack sentence
# (also variable_tracking.py's noise haystack).
NIAH_NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE_HAYSTACK = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

# NVIDIA/RULER scripts/data/synthetic/qa.py: how each document is shown in the QA context.
QA_DOCUMENT_PROMPT = "Document {i}:\n{document}"
