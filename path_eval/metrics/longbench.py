"""LongBench's per-sample metrics with the semantics of THUDM/LongBench v1 `metrics.py` / `eval.py`
(written from their definitions): each metric compares the prediction with one answer, a sample
scores the best over its answers, and the suite's LongBench rule says whose predictions score only
their first line after leading newlines (THUDM: trec, triviaqa and samsum; the FoX repository's copy:
every dataset) and to how many decimals a dataset cell is rounded (both originals: 2, x100). Values
are in 0..1; LongBench prints them x100.

Where lm-eval's port differs (it strips every prediction, and its code_sim skips blank lines where
the original takes the first line as it is), the original's rule is used here.
"""
from __future__ import annotations

import difflib
import re
import string
from collections import Counter

import numpy as np

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = frozenset(string.punctuation)
NUMBER = re.compile(r"\d+")
PARAGRAPH_ID = re.compile(r"Paragraph (\d+)")
CODE_COMMENT_MARKS = ("`", "#", "//")


def squad_normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def token_f1(prediction: list[str], reference: list[str]) -> float:
    common = sum((Counter(prediction) & Counter(reference)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(reference)
    return 2 * precision * recall / (precision + recall)


def qa_f1_score(prediction: str, answer: str, all_classes=None) -> float:
    """Token F1 of the SQuAD-normalised texts (QA sets and triviaqa)."""
    return token_f1(squad_normalize(prediction).split(), squad_normalize(answer).split())


def rouge_score(prediction: str, answer: str, all_classes=None) -> float:
    """ROUGE-L F of the `rouge` package (the original's): its sentences split at '.', its
    summary-level LCS. Any failure inside it (an empty prediction, recursion too deep for a very
    long unpunctuated sentence) scores 0, as the original's bare `except` does."""
    from rouge import Rouge

    try:
        return Rouge().get_scores([prediction], [answer], avg=True)["rouge-l"]["f"]
    except Exception:  # noqa: BLE001  (the original's rule: whatever rouge raises scores 0)
        return 0.0


def classification_score(prediction: str, answer: str, all_classes=None) -> float:
    """trec: the classes named in the prediction, less those contained in the answer (but not equal
    to it); 1/len(left) if the answer is among them. The removal walks the list as the original's
    loop does while it removes from it: the entry after a removed one is not looked at."""
    named = [name for name in all_classes if name in prediction]
    index = 0
    while index < len(named):
        if named[index] in answer and named[index] != answer:
            del named[index]
        index += 1
    return 1.0 / len(named) if answer in named else 0.0


def fuzz_ratio(first: str, second: str) -> int:
    """fuzzywuzzy's `fuzz.ratio` as the original's requirements install it (without
    python-Levenshtein, which would change the ratio): difflib's similarity x100, rounded; equal
    strings 100, an empty one 0."""
    if first == second:
        return 100
    if not first or not second:
        return 0
    return int(round(100 * difflib.SequenceMatcher(None, first, second).ratio()))


def code_sim_score(prediction: str, answer: str, all_classes=None) -> float:
    """lcc, repobench-p: fuzz.ratio / 100 between the answer and the prediction's first line (after
    leading newlines) that holds no backtick, '#' or '//'; blank lines count as lines."""
    first = next((line for line in prediction.lstrip("\n").split("\n")
                  if not any(mark in line for mark in CODE_COMMENT_MARKS)), "")
    return fuzz_ratio(first, answer) / 100


def _share_of_numbers_equal_to(prediction: str, wanted: str) -> float:
    numbers = NUMBER.findall(prediction)
    return sum(number == wanted for number in numbers) / len(numbers) if numbers else 0.0


def count_score(prediction: str, answer: str, all_classes=None) -> float:
    """passage_count: the share of the numbers in the prediction that equal the answer."""
    return _share_of_numbers_equal_to(prediction, str(answer))


def retrieval_score(prediction: str, answer: str, all_classes=None) -> float:
    """passage_retrieval_en: the share of the numbers in the prediction that equal the paragraph
    number of the answer ("Paragraph N")."""
    return _share_of_numbers_equal_to(prediction, PARAGRAPH_ID.findall(answer)[0])


def first_line(prediction: str) -> str:
    return prediction.lstrip("\n").split("\n")[0]


def length_bucket_cell(scores: list[float], decimals: int) -> float:
    """A LongBench-E cell (one dataset, one length bucket) as THUDM's and the FoX repository's
    eval.py (`scorer_e`) compute it: `round(100 * np.mean(scores), decimals)` over the bucket's
    per-sample scores in document order. np.mean sums pairwise, not left to right, and the round of
    its numpy float64 is numpy's (x100, then to the nearest integer, half to even, then /100), not
    Python's correctly rounded one: at a tie either moves the last decimal. Returned as a fraction
    (the records' unit), which x100 rounds back to the printed cell."""
    return float(round(100 * np.mean(np.asarray(scores, dtype=np.float64)), decimals)) / 100


def all_samples_cell(scores: list[float], decimals: int) -> float:
    """A dataset's cell over all its samples as the same eval.py scripts compute one (`scorer`, the
    whole-dataset cell): the scores summed one by one in document order into a Python float, then
    `round(100 * total / n, decimals)` with Python's round. Returned as a fraction, as above."""
    total = 0.0
    for score in scores:
        total += score
    return round(100 * total / len(scores), decimals) / 100


def longbench_score(metric: str, prediction: str, answers: list[str], all_classes: list[str] | None,
                    only_first_line: bool) -> float:
    """A sample's score: the best over its answers (0 without answers)."""
    from path_eval.metrics.registry import metric_entry  # the registry imports this module

    score = metric_entry(metric).function
    if only_first_line:
        prediction = first_line(prediction)
    return max((score(prediction, answer, all_classes) for answer in answers), default=0.0)
