"""RULER's metrics on edge cases, expectations worked out by hand from NVIDIA/RULER's definitions
(scripts/eval/evaluate.py postprocess_pred: strip, every character 0x00-0x1f becomes a newline,
strip again; scripts/eval/synthetic/constants.py: reference.lower() in prediction.lower(), the
fraction of references for string_match_all, any reference for string_match_part). References
are never postprocessed, and text is neither casefolded nor Unicode-normalised."""
import pytest

from path_eval.metrics.retrieval import ruler_postprocess, string_match_all, string_match_part


@pytest.mark.parametrize("prediction, processed", [
    ("  \t7\t  ", "7"),
    ("a\x00b\x0bc\x1fd", "a\nb\nc\nd"),
    ("12\r\n34", "12\n\n34"),           # each control character becomes its own newline
    ("\x1c5\x1d", "5"),                 # 0x1c-0x1f are whitespace to str.strip
    ("a\x7fb", "a\x7fb"),               # DEL is outside 0x00-0x1f
    ("\u00a05\u2028", "5"),             # strip removes Unicode whitespace too
])
def test_postprocess(prediction, processed):
    assert ruler_postprocess(prediction) == processed


@pytest.mark.parametrize("prediction, references, all_score, part_score", [
    ("ANSWER: AbC-DeF", ["abc-def"], 1.0, 1.0),
    ("", ["1234567"], 0.0, 0.0),
    (" \n\t ", ["1"], 0.0, 0.0),
    ("", [""], 1.0, 1.0),                               # "" is in every string
    ("12\t34", ["12\n34"], 1.0, 1.0),                   # the tab became a newline
    ("12\t34", ["12\t34"], 0.0, 0.0),                   # ... but the reference keeps its tab
    ("12\t34", ["12 34"], 0.0, 0.0),
    ("x\t", ["x\n"], 0.0, 0.0),                         # a trailing control char is stripped first
    ("1111111 2222222", ["1111111", "2222222", "3333333", "4444444"], 0.5, 1.0),
    ("1111111", ["1111111", "1111111", "2222222"], 2 / 3, 1.0),  # repeats count each time
    ("22", ["2", "22", "222"], 2 / 3, 1.0),             # substrings, not whole words
    ("straße", ["STRASSE"], 0.0, 0.0),                  # lower(), not casefold()
    ("ÉTÉ", ["été"], 1.0, 1.0),
    ("ＡＢＣ", ["abc"], 0.0, 0.0),                        # no NFKC normalisation
    ("caf\u00e9", ["cafe\u0301"], 0.0, 0.0),            # no NFC normalisation
    ("emoji \U0001f600 7", ["7", "\U0001f600"], 1.0, 1.0),
])
def test_string_match(prediction, references, all_score, part_score):
    assert string_match_all(prediction, references) == pytest.approx(all_score)
    assert string_match_part(prediction, references) == part_score
