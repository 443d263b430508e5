"""Every number in README.md's prose comes from the file it describes.

Each claim below is a phrase of the README with its numbers recomputed from their source: the
suites' YAML, the zoo's model cards, the paper's tables in `results/paper/`, pyproject.toml's
floors, the report and check code's constants, the timed worked example in
`results/readme/first_study.json`. A number the README gains outside these claims (and outside the
names in `NAMES`) fails `test_every_number_in_the_prose_is_a_claim_or_a_name`: tie it to its
source here, or point to the generated page that carries it. Code blocks are commands, checked by
tests/test_docs_links.py; inline code is a command, path or option, not a claim.
"""
import json
import math
import re
import signal
from pathlib import Path
from statistics import mean

import pytest

from path_eval.reports.check import DEFAULT_TOLERANCE
from path_eval.reports.paired import ALPHA
from path_eval.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ZOO = ROOT / "path_eval" / "zoo" / "models"
FIRST_STUDY = ROOT / "results" / "readme" / "first_study.json"

# Names that carry digits but state no quantity: the paper's tables and figures, task and tokenizer
# names, a licence, a GPU, the models and columns of Tables 4 and 5. `Tables 3 and 7` is one name.
NAMES = ("Tables 3 and 7", "Tables 4 and 5", "Table 2", "Table 3", "Table 7", "Figure 2", "Figure 3", "qa1-qa5",
         "Mistral v1", "Apache-2.0", "H200", "A5", "SmolLM2-1.7B", "Qwen2.5-7B-Instruct", "GSM8K", "RULER 4K")
# Exit statuses of the command line and the report's percent scale: interface, pinned by their own
# tests (tests/cli/test_bad_inputs.py, tests/cli/test_interrupts.py, tests/reports/test_check.py,
# tests/reports/test_variants.py), written here as the README writes them.
INTERFACE = ("exit code 2", f"exit {128 + signal.SIGINT} (SIGTERM {128 + signal.SIGTERM})",
             "| 0 |", "| 1 |", "| 2 |", "accuracies x100")


def prose() -> str:
    """README.md without fenced code blocks, inline code, link targets and links named by their path."""
    text = re.sub(r"```.*?```", "", README.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"\[[\w./-]+\.md\]\([^)\s]*\)", "", text)
    return re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", text)


WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def kilo(tokens: int) -> str:
    """A context length as the README writes it: 4096 -> 4K, 0 -> 0K."""
    assert tokens % 1024 == 0, tokens
    return f"{tokens // 1024}K"


def lengths(suite: str) -> list[int]:
    return load_suite(suite).lengths


def zoo_cards() -> list[dict]:
    return [json.loads((folder / "model_card.json").read_text()) for folder in sorted(ZOO.iterdir())]


def language_model_training_length() -> int:
    """The one training length of the zoo's language models (their model cards)."""
    found = {card["training_length"] for card in zoo_cards() if card["task"] == "lm"}
    assert len(found) == 1, found
    return found.pop()


def floor(requirement: str) -> str:
    """The `>=` floor of a requirement in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    if requirement == "python":
        return re.search(r'requires-python = ">=([\d.]+)"', text).group(1)
    return re.search(rf'"{requirement}>=([\d.]+)', text).group(1)


def table7_datasets() -> list[str]:
    """The datasets of the paper's Table 7 (its rows but the average)."""
    table7 = json.loads((ROOT / "results" / "paper" / "table7.json").read_text())
    return [row for row in table7["rows"] if row != "Average"]


def claims() -> list[str]:
    """The README's phrases, each with its numbers filled in from their source."""
    training = language_model_training_length()
    zoo_study = lengths("zoo_study")
    phonebook = load_suite("phonebook")
    cards = zoo_cards()
    table3 = json.loads((ROOT / "results" / "paper" / "table3.json").read_text())
    first_study = json.loads(FIRST_STUDY.read_text())
    steps = {step["name"]: step["wall_s"] for step in first_study["steps"]}
    return [
        f"BABILong at {kilo(min(lengths('babilong')))}-{kilo(max(lengths('babilong')))}",
        f"perplexity to {kilo(max(lengths('extrapolation')))} tokens and beyond",
        f"stories at {kilo(max(lengths('extrapolation')))} (Figure 3)",
        f"torch >= {floor('torch')}",
        f"transformers >= {floor('transformers')}",
        f"triton >= {floor('triton')}",
        f"Python >= {floor('python')}",
        # the demo runs at 1x and 2x the training length: tests/test_demo.py checks its lengths
        f"at 1x and 2x the language models' training length ({kilo(training)} and {kilo(2 * training)} tokens)",
        f"{WORDS[len(cards)].capitalize()} small models ship in the package",
        f"error for the {WORDS[sum(card['task'] == 'flipflop' for card in cards)]} flip-flop models",
        f"language models trained at {training} tokens",
        f"and {WORDS[min(card['layers'] for card in cards if card['task'] == 'flipflop')]}-layer flip-flop models of each",
        f"an A5 word-problem model of {WORDS[min(card['layers'] for card in cards if card['task'] == 'a5')]} layers",
        f"from {min(zoo_study) // training}x to {max(zoo_study) // training}x the training length",
        f"the zoo's {WORDS[len(load_suite('zoo_study').task('heldout').models)]} variants at "
        f"{min(zoo_study) // training}x-{max(zoo_study) // training}x their training length",
        f"RULER's {len(load_suite('ruler').tasks)} tasks at {'/'.join(kilo(n) for n in lengths('ruler'))}",
        f"PhoneBook at {'/'.join(kilo(n) for n in phonebook.lengths)}, {phonebook.tasks[0].seeds} seeds",
        f"LongBench-E's {len(table7_datasets())} datasets",
        f"all {WORDS[len(dict.fromkeys(column['group'] for column in table3['columns']))]} Table 3 suites in one",
        f"BABILong qa1-qa5 at {'/'.join(kilo(n) for n in lengths('babilong'))}",
        f"at p < {ALPHA}",
        f"may move by {DEFAULT_TOLERANCE['rel']:.0e} of its value".replace("e-0", "e-"),
        f"on {first_study['cpu_cores']} CPU cores shared with other work",
        f"(load average about {mean(s['load_average_1min_at_start'] for s in first_study['steps']):.0f}; "
        f"the run chose {first_study['cpu_threads']} thread,",
        f"the run took {steps['run'] / 60:.0f} minutes",
        f"the PaTH runs {steps['run_fp32']:.0f} s and {steps['run_bf16']:.0f} s",
        f"report, check and compare under {math.ceil(max(steps[s] for s in ('report', 'check', 'compare')))} s each",
    ]


@pytest.mark.parametrize("claim", claims())
def test_claim_matches_its_source(claim):
    if claim not in " ".join(prose().split()):
        pytest.fail(f"README.md does not say (or no longer says): {claim}")


def test_every_number_in_the_prose_is_a_claim_or_a_name():
    text = " ".join(prose().split())
    for phrase in sorted((*claims(), *NAMES, *INTERFACE), key=len, reverse=True):
        text = text.replace(phrase, " ")
    stray = re.findall(r"[^\s|]*\d[^\s|]*", text)
    assert not stray, f"numbers in README.md's prose with no source in this test: {stray}"


def test_the_suites_named_as_qa1_to_qa5_are_those_tasks():
    assert [t.name for t in load_suite("babilong").tasks] == [f"qa{i}" for i in range(1, 6)]


def test_longbench_e_averages_the_datasets_of_table7():
    average = next(a for a in load_suite("longbench_e").aggregates if a.name == "longbench_e")
    assert sorted(task.partition("/")[0] for task in average.mean_of) == sorted(table7_datasets())
