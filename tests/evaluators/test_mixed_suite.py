"""A suite mixing lm-eval tasks with generated ones: each evaluator makes its own `simple_evaluate`
call, both through the model's one resume cache and under the run's seed. The mixed run gives the
records of each task run alone, and a second run of it computes nothing and gives the same records."""
import pytest

from path_eval.cli import main
from path_eval.results import load_records
from tests.helpers import save_tiny_model, write_piqa

pytestmark = pytest.mark.slow  # three short runs on a tiny model

PIQA_ROWS = [{"goal": "Keep soup warm", "sol1": "Put the lid on the pot.", "sol2": "Put the pot in the fridge.",
              "label": 0},
             {"goal": "Dry wet shoes", "sol1": "Fill them with ice.", "sol2": "Stuff them with newspaper.", "label": 1},
             {"goal": "Open a stuck jar", "sol1": "Run the lid under hot water.", "sol2": "Freeze the jar.",
              "label": 0}]
TASKS = ("  - {name: piqa, lm_eval_task: piqa, metrics: [acc]}\n"
         "  - {name: phonebook, generator: phonebook, samples: 2, seeds: 2, stop: [\"\\n\"], "
         "metrics: [phonebook_exact_match]}\n")


def suite_file(folder, name, tasks):
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\ndescription: mixed\nlengths: [1k]\nmax_length: 1025\ntasks:\n{tasks}")
    return str(path)


def run(suite, folder, out):
    assert main(["run", "--suite", suite, "--model", str(folder / "model"), "--data-dir", str(folder / "data"),
                 "--out", str(out), "--quiet", "--bootstrap-iters", "0"]) == 0
    return {(r.task, r.length, r.metric): (r.value, r.stderr, r.n, r.seeds, r.seed_std) for r in load_records(out)}


def test_mixed_suite_matches_its_tasks_alone_and_resumes_from_its_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    save_tiny_model(tmp_path / "model", seed=5)
    write_piqa(tmp_path / "data", PIQA_ROWS)
    mixed = suite_file(tmp_path, "mixed", TASKS)
    together = run(mixed, tmp_path, tmp_path / "mixed")
    alone = run(suite_file(tmp_path, "piqa_only", TASKS.splitlines(keepends=True)[0]), tmp_path, tmp_path / "a")
    alone |= run(suite_file(tmp_path, "phonebook_only", TASKS.splitlines(keepends=True)[1]), tmp_path, tmp_path / "b")
    assert set(together) == {("piqa", 1024, "acc"), ("phonebook", 1024, "phonebook_exact_match")}
    assert together == alone
    assert run(mixed, tmp_path, tmp_path / "mixed") == together
    assert {r.provenance.requests_computed for r in load_records(tmp_path / "mixed")} == {0}
