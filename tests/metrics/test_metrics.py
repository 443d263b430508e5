"""The original benchmarks' per-sample metrics, on hand-computed cases."""
import pytest

from path_eval.metrics.retrieval import phonebook_exact_match, string_match_all, string_match_part


def test_registry_names_the_original_metrics():
    from path_eval.metrics.registry import metrics_of

    assert set(metrics_of("RULER", "PhoneBook")) == {"string_match_all", "string_match_part", "phonebook_exact_match"}


@pytest.mark.parametrize("prediction, references, score", [
    ("The numbers are 1234567 and 7654321.", ["1234567", "7654321"], 1.0),
    ("The numbers are 1234567.", ["1234567", "7654321"], 0.5),
    ("nothing here", ["1234567", "7654321", "1111111"], 0.0),
    ("VAR ABCDE, var fghij", ["ABCDE", "FGHIJ"], 1.0),            # case-insensitive both ways
    ("  1234567\x00765\x1f4321  ", ["1234567", "7654321"], 0.5),  # control chars become newlines
    ("1234567 1234567", ["1234567", "1234567"], 1.0),             # a repeated reference counts each time
    ("Paris", ["paris", "Lyon", "Nice", "Lille"], 0.25),
])
def test_string_match_all(prediction, references, score):
    assert string_match_all(prediction, references) == pytest.approx(score)


@pytest.mark.parametrize("prediction, references, score", [
    ("It was the Normans.", ["Normans", "the Normans", "Norse"], 1.0),
    ("it was THE NORMANS", ["the Normans"], 1.0),
    ("Nor\x0bmans", ["Normans"], 0.0),                            # a control char breaks the word
    ("the Vikings", ["Normans", "Norse"], 0.0),
    ("", ["Normans"], 0.0),
])
def test_string_match_part(prediction, references, score):
    assert string_match_part(prediction, references) == score


@pytest.mark.parametrize("prediction, score", [
    ("6123456789", 1.0),
    (" 6123456789", 1.0),                       # stripped
    ("6123456789 \nJames Smith: 7000000000", 1.0),  # later lines are ignored
    ("6123456789\r\n", 1.0),                    # "\r" is whitespace to strip()
    ("612345678", 0.0),                         # partial number
    ("61234567890", 0.0),
    ("6123456789.", 0.0),                       # extra characters on the first line
    ("6123456789 is the number", 0.0),
    ("\n6123456789", 0.0),                      # the first line is empty
    ("6123456789</s>", 0.0),                    # the original decodes special tokens too
    ("", 0.0),
])
def test_phonebook_exact_match(prediction, score):
    assert phonebook_exact_match(prediction, "6123456789") == score
