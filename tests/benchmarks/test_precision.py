"""benchmarks.precision: two runs compared record by record (B - A in the display unit) and
generation by generation (how many logged responses differ)."""
import json

from benchmarks.precision import compare_runs
from path_eval.results import write_results
from tests.helpers import records


def run_folder(folder, acc, responses):
    write_results(records(acc=acc), folder / "results.json")
    log = folder / "samples" / "m" / "niah_single_1_512_s1234.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps({"doc_id": i, "response": [r]}) + "\n" for i, r in enumerate(responses)))
    return folder


def test_cells_and_differing_generations(tmp_path):
    a = run_folder(tmp_path / "a", 0.5, ["1234567", "7654321", "42"])
    b = run_folder(tmp_path / "b", 0.625, ["1234567", "7654320", "42"])
    compared = compare_runs(a, b)
    piqa = next(c for c in compared["cells"] if c["task"] == "piqa")
    assert (piqa["a"], piqa["b"], piqa["b_minus_a"]) == (50.0, 62.5, 12.5)  # acc shown x100
    wiki = next(c for c in compared["cells"] if c["task"] == "wikitext")
    assert wiki["b_minus_a"] == 0.0  # a perplexity, as stored
    assert compared["generations"] == [{"model": "m", "log": "niah_single_1_512_s1234", "samples": 3, "differ": 1}]
