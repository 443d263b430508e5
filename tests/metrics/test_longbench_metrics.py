"""LongBench's metrics: hand-computed cases from the original's definitions, and agreement with
lm-eval's shipped functions where those equal the original (its module needs jieba and fuzzywuzzy
only for metrics we do not compare; stubs stand in for them)."""
import importlib.util
import random
import sys
import types
from pathlib import Path

import lm_eval
import pytest

from path_eval.metrics.longbench import (classification_score, code_sim_score, count_score, fuzz_ratio,
                                         longbench_score, qa_f1_score, retrieval_score, rouge_score)


@pytest.mark.parametrize("prediction, answer, score", [
    ("The Eiffel Tower.", "eiffel tower", 1.0),            # case, punctuation and articles are dropped
    ("Paris, France", "Paris", 2 * (1 / 2) * 1 / (1 / 2 + 1)),  # precision 1/2, recall 1
    ("a cat and a dog", "the dog", 2 * (1 / 3) * 1 / (1 / 3 + 1)),
    ("nothing", "Paris", 0.0),
    ("", "Paris", 0.0),
])
def test_qa_f1_by_hand(prediction, answer, score):
    assert qa_f1_score(prediction, answer) == pytest.approx(score)


def test_rouge_l_by_hand():
    # the `rouge` package's summary-level ROUGE-L counts distinct words: the LCS "the cat on the mat"
    # holds 4 distinct words, each text 5: P = R = 4/5, F = 0.8 (less its 1e-8 smoothing)
    assert rouge_score("the cat sat on the mat", "the cat lay on the mat") == pytest.approx(0.8, abs=1e-6)
    # sentences split at '.': the trailing " " is a sentence whose one word is "" (3 distinct words
    # against the answer's 4, LCS 2), so P = 2/3, R = 2/4; lm-eval strips the prediction first and
    # scores it 2/3 instead
    expected = 2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4)
    assert rouge_score("Human being. ", "dog. the. Human being") == pytest.approx(expected, abs=1e-6)
    assert rouge_score("", "the cat") == 0.0  # rouge raises on an empty hypothesis: 0, as the original
    assert rouge_score("completely different", "the cat") == 0.0


def test_classification_by_hand():
    classes = ["Human", "Human being", "Location", "Numeric value", "Numeric"]
    assert classification_score("Type: Location", "Location", classes) == 1.0
    assert classification_score("Location or Human", "Location", classes) == 0.5
    assert classification_score("Human being", "Human being", classes) == 1.0  # "Human" (inside the answer) dropped
    assert classification_score("Numeric value", "Numeric value", classes) == 1.0
    assert classification_score("no class", "Location", classes) == 0.0
    # the original's loop skips the entry after one it removes: "Numeric" stays, so 1/2
    assert classification_score("Numeric value", "Numeric value", ["Numeric value", "Num", "Numeric"]) == 0.5


def test_code_sim_takes_the_first_line_without_a_comment_mark():
    assert code_sim_score("\n\n# a comment\nx = compute(y)\nmore", "x = compute(y)") == 1.0
    # a blank line is a line (lm-eval skips it): "  " against the answer, 2 matching spaces of 16 characters
    assert code_sim_score("  \nx = compute(y)", "x = compute(y)") == 0.25
    assert code_sim_score("// c\n`x`", "x") == 0.0
    # difflib: "abcd" vs "abce": 3 matching characters of 8 -> 2*3/8 = 0.75
    assert fuzz_ratio("abcd", "abce") == 75 and code_sim_score("abcd", "abce") == 0.75
    assert fuzz_ratio("ab", "ab") == 100 and fuzz_ratio("", "ab") == 0 and fuzz_ratio("a", "bcd") == 0
    assert fuzz_ratio("abc", "abd") == 67  # 2*2/6 = 66.7, rounded as fuzzywuzzy does


def test_counting_metrics_by_hand():
    assert count_score("There are 7 paragraphs", "7") == 1.0
    assert count_score("7 or 8", "7") == 0.5
    assert count_score("none", "7") == 0.0
    assert retrieval_score("Paragraph 4", "Paragraph 4") == 1.0
    assert retrieval_score("Paragraph 4, maybe Paragraph 14", "Paragraph 4") == 0.5


def test_best_answer_and_first_line():
    assert longbench_score("qa_f1_score", "Paris", ["Lyon", "Paris"], None, only_first_line=False) == 1.0
    # trec, triviaqa, samsum: the first line after leading newlines
    assert longbench_score("qa_f1_score", "\n\nParis\nLyon Lyon Lyon", ["Paris"], None, only_first_line=True) == 1.0
    assert longbench_score("qa_f1_score", "\n\nParis\nLyon Lyon Lyon", ["Paris"], None,
                           only_first_line=False) == pytest.approx(2 * (1 / 4) / (1 / 4 + 1))
    assert longbench_score("qa_f1_score", "Paris", [], None, only_first_line=False) == 0.0


@pytest.fixture(scope="module")
def lm_eval_longbench_metrics():
    """lm-eval's LongBench metrics module, loaded with stand-ins for the packages it imports but the
    compared functions do not use."""
    path = Path(lm_eval.__file__).parent / "tasks" / "longbench" / "metrics.py"
    fuzzywuzzy = types.ModuleType("fuzzywuzzy")
    fuzzywuzzy.fuzz = types.SimpleNamespace(ratio=fuzz_ratio)
    stubs = {"jieba": types.ModuleType("jieba"), "fuzzywuzzy": fuzzywuzzy}
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("lm_eval_longbench_metrics", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, module_before in saved.items():
            if module_before is None:
                sys.modules.pop(name)
            else:
                sys.modules[name] = module_before
    return module


def random_text(rng: random.Random) -> str:
    pieces = ["the", "a", "Cat", "dog.", "Paris", ",", "7", "12", "Paragraph 3", "Human", "Human being", "Numeric",
              "Numeric value", "an", "x = 1", "  "]
    return "".join(rng.choice(pieces) + rng.choice(["", " ", "\n", ". "]) for _ in range(rng.randint(0, 10)))


def test_agrees_with_lm_eval_where_lm_eval_equals_the_original(lm_eval_longbench_metrics):
    """qa_f1, ROUGE-L, classification, count and retrieval equal lm-eval's on stripped predictions
    (lm-eval strips every prediction; all but ROUGE-L ignore the strip, so those agree on any input)."""
    theirs = lm_eval_longbench_metrics
    rng = random.Random(0)
    classes = ["Human", "Human being", "Numeric", "Numeric value", "Location"]
    for _ in range(300):
        prediction, answer = random_text(rng), random_text(rng)
        label = rng.choice(classes)
        paragraph = f"Paragraph {rng.randint(1, 12)}"
        assert qa_f1_score(prediction, answer) == theirs.qa_f1_score(prediction.strip(), answer)
        assert rouge_score(prediction.strip(), answer) == theirs.rouge_score(prediction.strip(), answer)
        assert classification_score(prediction, label, classes) == theirs.classification_score(
            prediction.strip(), label, all_classes=classes)
        assert count_score(prediction, "7") == theirs.count_score(prediction.strip(), "7")
        assert retrieval_score(prediction, paragraph) == theirs.retrieval_score(prediction.strip(), paragraph)


# ---------------------------------------------------------------- the two scoring rules
# fox: the FoX repository's eval/longbench/eval.py cuts every prediction to its first line (after
# leading newlines); thudm: THUDM's eval.py cuts only trec, triviaqa and samsum.

def rule_score(rule: str, dataset: str, metric: str, prediction: str, answers: list[str]) -> float:
    from path_eval.suites import load_suite

    suite = load_suite("longbench_e").with_longbench_rule(rule)
    return longbench_score(metric, prediction, answers, None, suite.scoring_rule().cuts_first_line(dataset))


def test_a_multi_line_gov_report_summary_under_both_rules():
    prediction, answer = "\ncosts rose sharply\nsee the appendix", "costs rose sharply"
    # fox: the first line equals the answer; thudm: six words against three, LCS 3: P 1/2, R 1, F 2/3
    assert rule_score("fox", "gov_report", "rouge_score", prediction, [answer]) == pytest.approx(1.0, abs=1e-6)
    assert rule_score("thudm", "gov_report", "rouge_score", prediction, [answer]) == pytest.approx(2 / 3, abs=1e-6)


def test_an_lcc_prediction_whose_first_line_holds_a_comment_mark():
    prediction, answer = "x = 1  # set x\nreturn x", "return x"
    # thudm: code_sim skips the line holding '#' and compares "return x" (ratio 100);
    # fox: only "x = 1  # set x" is left, which holds '#': no line to compare, ratio 0
    assert rule_score("thudm", "lcc", "code_sim_score", prediction, [answer]) == 1.0
    assert rule_score("fox", "lcc", "code_sim_score", prediction, [answer]) == 0.0


def test_trec_is_cut_under_both_rules():
    prediction = "\n\nHuman\nLocation"
    for rule in ("fox", "thudm"):
        assert longbench_score("classification_score", prediction, ["Human"], ["Human", "Location"],
                               load_suite_rule(rule).cuts_first_line("trec")) == 1.0
    # uncut, both classes are named: 1/2
    assert classification_score(prediction, "Human", ["Human", "Location"]) == 0.5


def load_suite_rule(rule: str):
    from path_eval.suites import load_suite

    return load_suite("longbench_e").with_longbench_rule(rule).scoring_rule()
