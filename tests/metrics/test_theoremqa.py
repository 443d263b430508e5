"""TheoremQA's answer rule (path_eval/metrics/theoremqa.py) against the original's definition
(TIGER-AI-Lab/TheoremQA's answer_clean and compare_answer_with_groundtruth), on hand-made cases: the
4% relative tolerance at its edges, integers rounded, lists sorted and compared element by element,
booleans, options, and the unit and percent forms the original cleans."""
import pytest

from path_eval.metrics.registry import metric_entry
from path_eval.metrics.theoremqa import answer_of, compare_answer, ground_truth, number_of, theoremqa_accuracy


@pytest.mark.parametrize("answer, truth, right", [
    # a float: within 4% of the ground truth, the ends included (4% of 100 is 4.0 in floating point)
    ("104", 100.0, True), ("96", 100.0, True), ("104.01", 100.0, False), ("95.99", 100.0, False),
    ("-2.6", -2.5, True), ("-2.4", -2.5, True), ("-2.61", -2.5, False),
    ("0", 0.0, True), ("0.0001", 0.0, False),
    # an integer: the answer rounded (Python's round: halves to even)
    ("3.4", 3, True), ("2.6", 3, True), ("3.6", 3, False), ("2.5", 3, False), ("3.5", 4, True),
    ("three", 3, False), ("", 3, False), ("nan", 3, False),
])
def test_numbers_within_the_relative_tolerance_integers_rounded(answer, truth, right):
    assert compare_answer(answer, str(truth), truth) is right


@pytest.mark.parametrize("answer, right", [
    ("(3, 1, 2)", True),  # a tuple of as many numbers, sorted before comparing
    ("(1, 2.05, 3)", True),  # each within the tolerance of its integer, rounded
    ("(1, 2)", False), ("(1, 2, 3, 4)", False), ("(1, 2, 4)", False), ("(1, x, 3)", False),
    ("[1, 2, 3]", True),  # equal to the ground truth's text
    ("[3, 2, 1]", False), ("[1,2,3]", False),  # a bracketed list counts only as that text, as the original's
])
def test_lists_element_by_element(answer, right):
    assert compare_answer(answer, "[1, 2, 3]", [1, 2, 3]) is right


def test_float_lists_within_the_tolerance():
    assert compare_answer("(0.52, 1.0)", "[0.5, 1.0]", [0.5, 1.0])
    assert not compare_answer("(0.53, 1.0)", "[0.5, 1.0]", [0.5, 1.0])


@pytest.mark.parametrize("response, truth, right", [
    ("Therefore, the answer is True.", "True", True), ("Therefore, the answer is yes.", "True", True),
    ("the answer is false", "False", True), ("The answer is: no", "True", False),
    ("the answer is none of them", "False", True),  # "no" within "none": the original's substring test
])
def test_booleans(response, truth, right):
    assert theoremqa_accuracy(response, truth, "bool") == float(right)


@pytest.mark.parametrize("response, right", [
    ("Therefore, the answer is (b).", True), ("the answer is (B)", True), ("The answer is (b) and (c)", True),
    ("Therefore, the answer is (c).", False), ("The answer is b", False),
])
def test_options_by_containment(response, right):
    assert theoremqa_accuracy(response, "(b)", "option") == float(right)


@pytest.mark.parametrize("response, stated", [
    ("So the share is 25%. Therefore, the answer is 25%.", "0.25"),  # percent as /100
    ("Therefore, the answer is 3.5 m/s.", "3.5"),  # a number and its unit word
    ("Therefore, the answer is v = 12 cm.", "12"),  # after the last '='
    ("Therefore, the answer is $1200.", "1200"),  # the currency sign dropped
    ("Therefore, the answer is 30°.", "30"),  # the degree sign dropped
    ("Therefore, the answer is \\frac{1}{2}.", "0.5"),  # LaTeX forms read as numbers
    ("Therefore, the answer is 3 \\times 10^{5}.", "300000"),
    ("Therefore, the answer is 2\\pi.", "6.28"),  # pi as 3.14, as the original
    ("We find 7 apples and then 42 pears", "42"),  # no statement: the last number
    ("It is unclear", ""), ("I have no idea", "False"),  # "no": the substring test again
])
def test_the_stated_answer_as_the_original_reads_it(response, stated):
    assert answer_of(response) == stated


def test_a_response_that_goes_on_to_further_problems_is_read_up_to_its_first_paragraph():
    response = "x = 2, so the answer is 4.\n\nProblem: what is 3+3?\nThe answer is 6. The answer is 6."
    assert answer_of(response) == "4"


def test_ground_truths_as_the_hub_writes_them():
    """The hub's rows hold answers as text; their types say how the original's loader holds them."""
    assert ground_truth("3", "integer") == ("3", 3) and ground_truth("0.25", "float") == ("0.25", 0.25)
    assert ground_truth("[1, 2]", "list of integer") == ("[1, 2]", [1, 2])
    assert ground_truth("True", "bool") == ("True", None) and ground_truth("(a)", "option") == ("(a)", None)
    assert ground_truth(True, "bool") == ("True", None) and ground_truth(2.5, "float") == ("2.5", 2.5)
    assert number_of("1.5e3") == 1500 and number_of("2.0") == 2 and number_of("a") is None
    assert theoremqa_accuracy("Therefore, the answer is 3.", "3", "integer") == 1.0
    assert metric_entry("theoremqa_accuracy").function is theoremqa_accuracy


def test_rows_without_the_fields_read_are_one_line_before_a_model_loads(tmp_path):
    """The hub's field names came from loaders of the dataset: a renamed field is named, not a KeyError
    mid-run."""
    from path_eval.errors import PathEvalError
    from path_eval.tasks.theoremqa import check_fields

    good, renamed = tmp_path / "good.jsonl", tmp_path / "renamed.jsonl"
    good.write_text('{"Question": "1+1?", "Answer": "2", "Answer_type": "integer", "Picture": false}\n')
    renamed.write_text('{"question": "1+1?", "Answer": "2", "answer_type": "integer"}\n')
    check_fields(good)
    with pytest.raises(PathEvalError, match="lack Question, Answer_type .*fields: question, Answer, answer_type"):
        check_fields(renamed)
