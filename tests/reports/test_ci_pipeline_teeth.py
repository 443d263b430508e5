"""The `ci` suite's check has teeth against a broken *pipeline* (test_ci_check_teeth.py breaks the
models): one zoo model that retrieves at its training length (MODEL at 1024: the baseline has it
finding the needle and the number in 4 of 4 samples) runs one task with the code broken in one of
three ways by monkeypatch, and `eval.py check` against the committed baseline, filtered to that
model, task and length, must fail; with the code unchanged it must pass (exit 0).

  (a) the needle left out: RULER's NIAH generator inserts no needle (`_NiahGenerator.line_context`,
      and `essay_context` for the essay haystacks), so the prompt asks for a key it never states;
  (b) the answer scored against the wrong field: the registry's reference field of
      `phonebook_exact_match` is the sample's `outputs` (RULER's field, which PhoneBook samples also
      carry, as a list) instead of its `answer`;
  (c) PhoneBook's query names a missing entry: `build_prompt` leaves the queried entry out of the
      book, so its name (and number) is nowhere in the prompt.

Generated samples are frozen in $PATH_EVAL_CACHE/frozen, keyed by generator version and inputs but
not by the generator's code: a broken generator would silently reuse good frozen samples (tried:
with (a)'s patch and the good set already frozen, the run scores 1.0 with the baseline's fingerprint
and check exits 0). Every run here therefore gets a fresh PATH_EVAL_CACHE, and each broken case
asserts that the breakage is really in what the model saw or in how it was scored.

Which exit code, and why (path_eval/reports/check.py): a record's provenance carries
`data_fingerprint`, a PROTOCOL_FIELD, and for a generated task that fingerprint is the sha256 of the
frozen samples file itself (`fingerprint([frozen, ...])` in the lm-eval evaluator), not of the
generator's inputs. So:
  (b) changes no sample, only the score: the fingerprint matches the baseline's, check compares the
      values and exits 1 (REGRESSED: 1.0 -> 0.0, tolerance 0.26 either direction).
  (a), (c) change the samples, so the fingerprint differs from the baseline's: check refuses to
      compare and exits 2 ("incomparable: ... data_fingerprint differs"), the only reason it gives.
      That is the honest verdict (the data changed; comparing the scores would not be like with
      like) and it fails CI too. The test asserts exactly that, and then shows the scores alone
      would also fail it: with data_fingerprint taken out of PROTOCOL_FIELDS (only for this
      comparison; every other protocol field still has to match) check exits 1 (REGRESSED). No
      baseline is edited.
  Unchanged code regenerates byte-identical samples in a fresh cache (the generators are seeded):
  the fingerprints match the baseline's and check exits 0.

Runtime: four model runs of 4 samples at 1024 tokens (NIAH and PhoneBook, unchanged and broken);
(b) rescores the unchanged PhoneBook run's logged generations (`eval.py rescore`, which scores with
the same `generated.process_results` a run hands lm-eval) instead of running the model again.
About 15 s in all on a 2-core CPU.
"""
import dataclasses
import json
import re
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.metrics import registry
from path_eval.reports import check as check_module
from path_eval.tasks import phonebook
from path_eval.tasks.frozen import read_frozen
from path_eval.tasks.ruler import niah

BASELINE = Path(__file__).resolve().parents[2] / "results" / "ci" / "baseline.json"
MODEL = "fox"  # a zoo name: in the baseline it scores 1.0 on niah_single_1 and phonebook at 1024
LENGTH = 1024  # the language models' training length
NIAH_TASK = "niah_single_1"  # the noise haystack: needles go in through line_context


def run_task(root: Path, task: str) -> Path:
    """MODEL on `task` at LENGTH, frozen samples in a cache of its own (root/cache)."""
    out = root / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH_EVAL_CACHE", str(root / "cache"))
        patch.setenv("HF_DATASETS_CACHE", str(root / "cache" / "hf-datasets"))  # else main sets it for good
        assert main(["run", "--suite", "ci", "--model", f"zoo:{MODEL}", "--tasks", task, "--lengths", str(LENGTH),
                     "--out", str(out), "--quiet"]) == 0
    return out


def frozen_samples(root: Path, task_folder: str) -> list[dict]:
    """The samples the run froze in root/cache (one set: one task, length and seed)."""
    files = sorted((root / "cache" / "frozen" / task_folder).glob(f"{LENGTH}-*.jsonl"))
    assert len(files) == 1, files
    return read_frozen(files[0])


def filtered_baseline(tmp_path: Path, task: str) -> Path:
    """The committed baseline's records of MODEL, `task` and LENGTH, with their tolerances."""
    baseline = json.loads(BASELINE.read_text())
    kept = [r for r in baseline["records"] if r["model"] == MODEL and r["task"] == task and r["length"] == LENGTH]
    assert kept, "the baseline has records for this model, task and length"
    assert all(r["value"] >= 0.75 for r in kept), \
        f"{MODEL} must retrieve at {LENGTH} in the baseline, or a broken pipeline cannot move its score: {kept}"
    names = {r["metric"] for r in kept} | {f"{r['task']}/{r['metric']}" for r in kept}
    filtered = tmp_path / f"baseline_{task}.json"
    filtered.write_text(json.dumps({"tolerances": {n: t for n, t in baseline["tolerances"].items() if n in names},
                                    "records": kept}))
    return filtered


def check_run(tmp_path: Path, run: Path, task: str, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", str(run), "--baseline", str(filtered_baseline(tmp_path, task))])
    return code, capsys.readouterr().out


def refused_for_the_data_then_regressed(tmp_path, run, task, monkeypatch, capsys) -> None:
    """Cases (a), (c): check exits 2 because the frozen samples (their fingerprint) differ, and for no
    other reason; compared regardless of that fingerprint, the values fail it with exit 1."""
    code, out = check_run(tmp_path, run, task, capsys)
    incomparable = [line for line in out.splitlines() if line.startswith("incomparable:")]
    assert code == 2, out
    assert incomparable and all("data_fingerprint differs" in line for line in incomparable), out
    monkeypatch.setattr(check_module, "PROTOCOL_FIELDS",
                        tuple(f for f in check_module.PROTOCOL_FIELDS if f != "data_fingerprint"))
    code, out = check_run(tmp_path, run, task, capsys)
    assert code == 1, out
    assert "REGRESSED" in out


def phonebook_parts(prompt: str) -> tuple[dict[str, list[str]], str]:
    """({name: [numbers]} of the book, the queried name) of a PhoneBook prompt."""
    book, _examples, query = prompt.split("\n\n")
    entries: dict[str, list[str]] = {}
    for line in book.split("\n"):
        name, number = line.rsplit(": ", 1)
        entries.setdefault(name, []).append(number)
    assert query.endswith(":")
    return entries, query[:-1]


@pytest.fixture(scope="module")
def unchanged_run(tmp_path_factory):
    """The unchanged pipeline's run of a task (made once per module, in a cache of its own)."""
    runs: dict[str, tuple[Path, Path]] = {}

    def get(task: str) -> tuple[Path, Path]:
        if task not in runs:
            root = tmp_path_factory.mktemp(f"unchanged_{task}")
            runs[task] = root, run_task(root, task)
        return runs[task]
    return get


def test_unchanged_niah_passes(tmp_path, unchanged_run, capsys):
    root, run = unchanged_run(NIAH_TASK)
    for sample in frozen_samples(root, f"ruler/{NIAH_TASK}"):  # the sanity checks of (a) see a needle here
        assert all(value in sample["input"] for value in sample["outputs"])
        assert all(sample["input"].count(key) == 2 for key in sample["extra"]["queries"])  # needle and question
        assert "One of the special magic" in sample["input"]
    code, out = check_run(tmp_path, run, NIAH_TASK, capsys)
    assert code == 0, out
    assert "0 of 1 metrics regressed" in out


def test_unchanged_phonebook_passes(tmp_path, unchanged_run, capsys):
    root, run = unchanged_run("phonebook")
    for sample in frozen_samples(root, "phonebook"):  # the sanity checks of (c) see the entry here
        entries, query = phonebook_parts(sample["input"])
        assert sample["answer"] in entries[query]
    code, out = check_run(tmp_path, run, "phonebook", capsys)
    assert code == 0, out
    assert "0 of 1 metrics regressed" in out


def test_a_needle_left_out_fails_the_check(tmp_path, monkeypatch, capsys):
    """(a): exit 2 (the frozen samples differ), and 1 on the values alone."""
    line_context, essay_context = niah._NiahGenerator.line_context, niah._NiahGenerator.essay_context
    monkeypatch.setattr(niah._NiahGenerator, "line_context",
                        lambda self, size, needles, rng: line_context(self, size, [], rng))
    monkeypatch.setattr(niah._NiahGenerator, "essay_context",
                        lambda self, size, needles, rng: essay_context(self, size, [], rng))
    run = run_task(tmp_path, NIAH_TASK)
    samples = frozen_samples(tmp_path, f"ruler/{NIAH_TASK}")
    for sample in samples:
        assert not any(value in sample["input"] for value in sample["outputs"]), "the needle's value is in the prompt"
        assert all(sample["input"].count(key) == 1 for key in sample["extra"]["queries"])  # the question alone
        assert "One of the special magic" not in sample["input"]  # no needle sentence at all
    refused_for_the_data_then_regressed(tmp_path, run, NIAH_TASK, monkeypatch, capsys)


def test_b_answer_scored_against_the_wrong_field_fails_the_check(tmp_path, unchanged_run, monkeypatch, capsys):
    """(b): exit 1; the samples and generations are the unchanged run's, only the scoring moved."""
    entry = registry.metric_entry("phonebook_exact_match")
    assert entry.reference_field == "answer"
    monkeypatch.setitem(registry.REGISTRY, entry.name, dataclasses.replace(entry, reference_field="outputs"))
    _, run = unchanged_run("phonebook")
    rescored = tmp_path / "rescored"
    assert main(["rescore", str(run), "--out", str(rescored)]) == 0
    logs = list((run / "samples").glob("*/phonebook_*.jsonl"))
    assert len(logs) == 1
    rows = [json.loads(line) for line in logs[0].read_text().splitlines()]
    # the breakage took effect: the model's answers are right (as the baseline says), yet score 0
    assert sum(r["response"][0].split("\n")[0].strip() == r["doc"]["answer"] for r in rows) >= 3
    assert [r["value"] for r in json.loads((rescored / "results.json").read_text())
            if r["task"] == "phonebook" and r["length"] == LENGTH] == [0.0]
    code, out = check_run(tmp_path, rescored, "phonebook", capsys)
    assert code == 1, out
    assert "REGRESSED" in out and "incomparable" not in out


def test_c_phonebook_query_naming_a_missing_entry_fails_the_check(tmp_path, monkeypatch, capsys):
    """(c): exit 2 (the frozen samples differ), and 1 on the values alone."""
    build_prompt = phonebook.build_prompt

    def without_the_queried_entry(entries, picks):
        prompt, answer = build_prompt(entries, picks)
        query = entries[picks[2]]
        line = phonebook.ENTRY_TEMPLATE.format(name=query[0], number=query[1])
        book, rest = prompt.split("\n\n", 1)
        kept = [other for other in book.split("\n") if not other.startswith(f"{query[0]}: ")]
        assert len(kept) < len(book.split("\n")) and line not in kept
        return "\n".join(kept) + "\n\n" + rest, answer

    monkeypatch.setattr(phonebook, "build_prompt", without_the_queried_entry)
    run = run_task(tmp_path, "phonebook")
    for sample in frozen_samples(tmp_path, "phonebook"):
        entries, query = phonebook_parts(sample["input"])
        assert query not in entries, "the queried name is in the book"
        assert not re.search(rf"\b{sample['answer']}\b", sample["input"]), "the queried number is in the prompt"
    refused_for_the_data_then_regressed(tmp_path, run, "phonebook", monkeypatch, capsys)
