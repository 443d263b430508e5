"""BABILong's per-sample metrics (values 0 or 1; the paper prints means x100).

`babilong_accuracy` has the semantics of booydar/babilong `babilong/metrics.py` (`compare_answers`),
written from its definition: the output is lower-cased and cut to its first sentence (text before the
first "."), and before any "<context>" or "<example>" the model went on to write; of the task's
answer words (its label set) found in what is left, those that also occur in the question are dropped
(a question's words are never its answer); the sample is correct iff the target is the only word left.
The original also cuts at "Question", but only after lower-casing, so that cut never happens: we keep
its behaviour. `target_substring` is lm-eval's babilong metric: the target is a case-insensitive
substring of the output (a longer, wrong answer that names the target also counts).
"""
from __future__ import annotations

from path_eval.errors import PathEvalError

# Per bAbI task, every answer its samples can have (qa1-qa4: rooms; qa5: people and objects).
TASK_LABELS = {
    "qa1": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa2": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa3": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa4": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa5": ("bill", "fred", "jeff", "mary", "apple", "football", "milk"),
}
CONTINUATION_MARKS = ("<context>", "<example>")


def answer_span(output: str) -> str:
    """The part of the output the original reads: lower case, first sentence, no echoed prompt."""
    text = output.lower().split(".")[0]
    for mark in CONTINUATION_MARKS:
        text = text.split(mark)[0]
    return text


def babilong_accuracy(output: str, target: str, question: str, task: str) -> float:
    if task not in TASK_LABELS:
        raise PathEvalError(f"no BABILong answer words for task {task!r}: the babilong metric knows "
                            f"{', '.join(TASK_LABELS)}")
    span, asked = answer_span(output), question.lower()
    named = {label for label in TASK_LABELS[task] if label in span and label not in asked}
    return float(named == {target.lower()})


def target_substring(output: str, target: str, question: str, task: str) -> float:
    return float(target.strip().lower() in output.lower())

