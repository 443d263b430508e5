"""TheoremQA's scoring (Chen et al. 2023; TIGER-AI-Lab/TheoremQA): the answer a response states, read
as the original's `answer_clean` reads it, compared with the ground truth as its
`compare_answer_with_groundtruth` compares them. Written here from the original's definition (its
code is not a package; its numeric parsing leans on latex2sympy2, which path-eval does not depend on:
`evaluate_number` reads the plain and LaTeX number forms an answer takes).

The comparison, by the ground truth's type:
- an option, (a) to (f): right when the answer contains it, case aside;
- any answer equal to the ground truth's text, case aside (True / False, and lists written as Python
  prints them);
- an integer: the answer, read as a number, rounded (Python's `round`) equals it;
- a float: the answer within 4% of it, the ends included (`RELATIVE_TOLERANCE`);
- a list of numbers: an answer written as a tuple, `(a, b)`, of as many numbers, both sorted, each
  pair compared as above.

The statement is read after the last "the answer is" (the original's triggers); a response without
one gives its last number. A stated answer becomes True for "yes"/"true" and False for "no"/"false"
anywhere in it (the original's substring test, which also reads "none" as False), stays as it is
when it names an option, and otherwise is read as a number: after its last "=", without units
(%, as /100; currency and degree signs; pi as 3.14, as the original), else its first word where a
unit word follows."""
from __future__ import annotations

import ast
import math
import operator
import re

# The original's answer triggers (run.py), in its order.
TRIGGERS = ("The answer is:", "The answer is", "the answer is")
OPTIONS = ("(a)", "(b)", "(c)", "(d)", "(e)", "(f)")
RELATIVE_TOLERANCE = 0.04
NUMBER = re.compile(r"-?\d*\.?\d+")


def answer_of(response: str) -> str:
    """The answer a response states (the original's `answer_clean`): after its last trigger, else its
    last number; a response holding a trigger more than once went on to further problems, so only
    its first paragraph is read."""
    text = response.strip("\n")
    if any(text.count(trigger) > 1 for trigger in TRIGGERS):
        text = text.split("\n\n")[0]
    parts = re.split("|".join(map(re.escape, TRIGGERS)), text)
    stated = len(parts) > 1
    text = (parts[-1] if stated else text).strip("\n").rstrip(".").rstrip("/").strip(" ")
    return _normalised(text, stated).rstrip(".").rstrip("/")


def _normalised(text: str, stated: bool) -> str:
    lower = text.lower()
    if "yes" in lower or "true" in lower:
        return "True"
    if "no" in lower or "false" in lower:
        return "False"
    if any(option in lower for option in OPTIONS):
        return text
    if not stated:
        numbers = NUMBER.findall(text)
        return numbers[-1] if numbers else ""
    text = without_units(text.split("=")[-1].strip())
    value = evaluate_number(text)
    if isinstance(value, (int, float)):
        return str(value)
    if re.match(r"-?[\d.]+\s\D+$", text) or re.match(r"-?[\d.]+\s\S+$", text):
        return text.split(" ")[0]  # a number and its unit word
    return text


def without_units(text: str) -> str:
    """The original's unit cleaning: pi as 3.14 (a digit before it multiplies), % as /100, currency,
    degree and Celsius signs dropped."""
    text = text.replace("\\pi", "π")
    text = re.sub(r"\{π\}", "3.14", text)
    text = re.sub(r"(\d)π", r"\1*3.14", text)
    text = re.sub(r"(?<![\d}])π", "3.14", text)
    text = text.replace("%", "/100")
    for sign in ("$", "¥", "°C", " C", "°"):
        text = text.replace(sign, "")
    return text


# LaTeX number forms, rewritten into Python arithmetic before `evaluate_number` reads them.
_LATEX = [(re.compile(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}"), r"((\1)/(\2))"),
          (re.compile(r"\\sqrt\{([^{}]*)\}"), r"sqrt(\1)"),
          (re.compile(r"\\(times|cdot)"), "*"), (re.compile(r"\\(left|right|,|!|;)"), ""),
          (re.compile(r"\^"), "**"), (re.compile(r"\{"), "("), (re.compile(r"\}"), ")")]
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_NAMES = {"pi": math.pi, "e": math.e}
_FUNCTIONS = {"sqrt": math.sqrt, "log": math.log, "exp": math.exp, "sin": math.sin, "cos": math.cos,
              "pow": math.pow}


def evaluate_number(text: str):
    """The number (or tuple/list of numbers) `text` writes, plain or in LaTeX (\\frac, \\sqrt, \\times,
    ^, braces), by arithmetic alone, never Python's eval; None where it writes none."""
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    text = text.replace("math.", "")
    try:
        return _value(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError, RecursionError):
        return None


def _value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_value(element) for element in node.elts]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        return _FUNCTIONS[node.func.id](*[_value(argument) for argument in node.args])
    raise ValueError("not a number")


def number_of(answer) -> int | float | None:
    """An answer as a number (the original's `number_it`): units cleaned, a tuple's first element,
    integral values as ints; None where it is none."""
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return answer
    value = evaluate_number(without_units(str(answer)))
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, (int, float)) or isinstance(value, complex):
        return None
    value = float(value)
    return round(value) if value.is_integer() else value


def numbers_match(answer: int | float | None, truth: int | float) -> bool:
    """An integer ground truth: the answer rounded equals it; a float: within 4% of it, ends included."""
    if answer is None or math.isnan(answer):
        return False
    if isinstance(truth, int):
        return round(answer) == truth
    margin = abs(truth) * RELATIVE_TOLERANCE
    return truth - margin <= answer <= truth + margin


def lists_match(answer: list, truth: list) -> bool:
    """As many numbers as the ground truth's, both sorted, each pair by `numbers_match`."""
    if len(answer) != len(truth) or any(not isinstance(x, (int, float)) for x in answer):
        return False
    return all(numbers_match(a, t) for a, t in zip(sorted(answer), sorted(truth)))


def compare_answer(answer: str, truth_text: str, truth_number=None) -> bool:
    """The original's `compare_answer_with_groundtruth`: `truth_text` the ground truth as text,
    `truth_number` its number or list of numbers (None for booleans and options)."""
    if truth_text.lower() in OPTIONS:
        return truth_text.lower() in answer.lower()
    if answer.lower() == truth_text.lower():
        return True
    if truth_number is None:
        return False
    if isinstance(truth_number, (int, float)):
        return numbers_match(number_of(answer), truth_number)
    if not (answer.startswith("(") and answer.endswith(")")):
        return False
    elements = evaluate_number(answer)
    if not isinstance(elements, list):
        return False
    return lists_match([number_of(element) for element in elements], truth_number)


def ground_truth(answer, answer_type: str) -> tuple[str, object]:
    """A row's answer as the original's loader holds it: its text, and its number or list of numbers
    for the numeric types (None for booleans and options, and for an answer that writes no number:
    compared as text alone). The hub's rows give answers as text, the original's file as JSON values."""
    text = str(answer).strip()
    if isinstance(answer, bool) or answer_type not in ("integer", "float", "list of integer", "list of float"):
        return text, None
    try:
        value = ast.literal_eval(text) if isinstance(answer, str) else answer
        if answer_type.startswith("list"):
            kind = int if answer_type == "list of integer" else float
            return text, [kind(x) for x in value]
        return text, int(value) if answer_type == "integer" else float(value)
    except (ValueError, TypeError, SyntaxError):
        return text, None


def theoremqa_accuracy(response: str, answer, answer_type: str) -> float:
    """1.0 where the response's stated answer matches the row's (TheoremQA's rule), else 0.0."""
    text, number = ground_truth(answer, answer_type)
    return float(compare_answer(answer_of(response), text, number))
