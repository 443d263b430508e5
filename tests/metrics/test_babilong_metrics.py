"""BABILong's metrics on cases worked out by hand from the original's definition (compare_answers:
lower case, first sentence, cut at an echoed "<context>"/"<example>", the task's answer words less
those in the question, correct iff only the target is left), and the substring metric against
lm-eval's own babilong scorer."""
import pytest

from path_eval.errors import PathEvalError
from path_eval.metrics.babilong import babilong_accuracy, target_substring

CASES = [  # (task, output, target, question, babilong_accuracy, target_substring)
    ("qa1", "The most recent location of Mary is office.", "office", "Where is Mary?", 1.0, 1.0),
    ("qa1", "OFFICE", "office", "Where is Mary?", 1.0, 1.0),
    ("qa1", "Mary is in the kitchen or the office.", "office", "Where is Mary?", 0.0, 1.0),  # two answers
    ("qa1", "The bathroom. Later the office.", "office", "Where is Mary?", 0.0, 1.0),  # first sentence only
    ("qa1", "office\n<example>\nkitchen", "office", "Where is Mary?", 1.0, 1.0),  # echoed example cut
    ("qa1", "office\n<context>\nkitchen", "office", "Where is Mary?", 1.0, 1.0),
    ("qa1", "", "office", "Where is Mary?", 0.0, 0.0),
    ("qa1", "The most recent location of Mary is the garden.", "office", "Where is Mary?", 0.0, 0.0),
    # a word of the question is never the answer: "kitchen" is dropped, "bathroom" alone is left
    ("qa3", "Before the kitchen the apple was in the bathroom.", "bathroom", "Where was the apple before the kitchen?",
     1.0, 1.0),
    ("qa3", "The apple was in the kitchen.", "kitchen", "Where was the apple before the kitchen?", 0.0, 1.0),
    ("qa4", "garden", "garden", "What is the kitchen east of?", 1.0, 1.0),
    # labels are substrings: "bedrooms" names bedroom
    ("qa4", "bedrooms", "bedroom", "What is north of the hallway?", 1.0, 1.0),
    ("qa5", "Jeff", "Jeff", "Who did Fred give the football to?", 1.0, 1.0),
    ("qa5", "Fred gave it to Jeff", "Jeff", "Who did Fred give the football to?", 1.0, 1.0),  # Fred is asked
    ("qa5", "Jeff and Bill", "Jeff", "Who did Fred give the football to?", 0.0, 1.0),
    # the original's cut at "Question" comes after lower-casing and never happens: Bill still counts
    ("qa5", "Jeff Question: who is Bill", "Jeff", "Who did Fred give the football to?", 0.0, 1.0),
    ("qa5", "milk", "milk", "What did Bill give to Mary?", 1.0, 1.0),
]


@pytest.mark.parametrize("task, output, target, question, accuracy, substring", CASES)
def test_hand_computed_cases(task, output, target, question, accuracy, substring):
    assert babilong_accuracy(output, target, question, task) == accuracy
    assert target_substring(output, target, question, task) == substring


@pytest.mark.parametrize("task, output, target, question, accuracy, substring", CASES)
def test_the_substring_metric_equals_lm_evals(task, output, target, question, accuracy, substring):
    from lm_eval.tasks.babilong.common_utils import process_results

    doc = {"input": "", "question": question, "target": target}
    assert target_substring(output, target, question, task) == process_results(doc, [output])["acc"]


def test_a_task_without_answer_words_is_an_error():
    with pytest.raises(PathEvalError, match="no BABILong answer words for task 'qa6'"):
        babilong_accuracy("yes", "yes", "Is John in the garden?", "qa6")
