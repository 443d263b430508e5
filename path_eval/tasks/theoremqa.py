"""TheoremQA (Chen et al. 2023): the hub's 800 test problems (`TIGER-Lab/TheoremQA`), prompted as the
original prompts chat models (zero-shot: an instruction to end with "the answer is ..." in one of
the answer forms, then the problem and "Solution:"), decoded greedily and scored by the original's
rule (path_eval/metrics/theoremqa.py), as an lm-eval `generate_until` task over the local rows.

The instruction is ours, written from the paper's description of the answer forms: the original's
text is in no installed package (a departure docs/suites/conversion.md names). Under
`--apply-chat-template` lm-eval puts the prompt in the user turn; the original gives the instruction
as a system message. Questions with a picture (the hub's `Picture`) are asked as text alone and
counted, as the original's text-only models are scored on all 800."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from path_eval.data import DatasetSplit, require
from path_eval.errors import PathEvalError
from path_eval.metrics.registry import lm_eval_metric_list, metric_entry
from path_eval.tasks.lm_eval_tasks import LmEvalTask, no_target

if TYPE_CHECKING:
    from path_eval.suites import TaskSpec

SPLIT = DatasetSplit("TIGER-Lab/TheoremQA", None, "test")
INSTRUCTION = ("Solve the following problem. Finish your solution with a sentence of the form \"Therefore, "
               "the answer is X.\", where X is only one of: a number (such as 0.1) with no unit or symbol, "
               "a list of numbers (such as [2, 3, 4]), True or False, or an option (such as (a), (b), (c) "
               "or (d)).")
# The original's budget for chat models (run_gpt.py's max_tokens; its few-shot run of open models, 2048).
MAX_NEW_TOKENS = 1024
METRIC = "theoremqa_accuracy"
FIELDS = ("Question", "Answer", "Answer_type")  # what the prompt and the scorer read of a row


def prompt(doc: dict) -> str:
    return f"{INSTRUCTION}\n\nProblem:\n{doc['Question']}\nSolution:"


def score(doc: dict, results: list[str]) -> dict[str, float]:
    """lm-eval's per-document score: the one greedy response by TheoremQA's rule."""
    return {METRIC: metric_entry(METRIC).function(results[0], doc["Answer"], doc["Answer_type"])}


def build_theoremqa_task(spec: TaskSpec, data_dir: Path, suite: str) -> LmEvalTask:
    """The task's lm-eval config over the local rows (missing: one line naming `download`)."""
    file = require(SPLIT, data_dir, suite)
    check_fields(file)
    config = {
        "task": spec.name, "dataset_path": "json", "dataset_name": None,
        "dataset_kwargs": {"data_files": {"test": str(file)}}, "test_split": "test",
        "output_type": "generate_until", "doc_to_text": prompt, "doc_to_target": no_target, "target_delimiter": "",
        "process_results": score, "metric_list": lm_eval_metric_list([METRIC]),
        "generation_kwargs": {"until": [], "max_gen_toks": MAX_NEW_TOKENS, "do_sample": False, "temperature": 0.0},
        "num_fewshot": 0, "repeats": 1, "metadata": {"version": 1.0},
    }
    return LmEvalTask(spec, config, [SPLIT], [file], lm_eval_name=spec.name)


def check_fields(file: Path) -> None:
    """The rows carry the fields the prompt and the scorer read, checked on the first row before any
    model loads: the hub's field names were read from loaders of the dataset, not from its card, so
    a renamed field is one line here rather than a KeyError mid-run."""
    with open(file, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        row = json.loads(first)
    except ValueError:
        row = None
    missing = [field for field in FIELDS if not isinstance(row, dict) or field not in row]
    if missing:
        raise PathEvalError(f"{file}: TheoremQA's rows lack {', '.join(missing)} (fields: "
                            f"{', '.join(row) if isinstance(row, dict) else 'none'}): the hub's rows changed "
                            "shape; report it, naming these fields")
