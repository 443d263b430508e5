"""RULER and PhoneBook through lm-eval: frozen samples, prompts, metrics and records.

An oracle model that reads the answer out of the prompt with its own regexes (written from the
benchmarks' formats, not from our generators) must score 1; one that answers wrongly must score 0.
The CLI runs the real suites offline at 4K with a small model, on the committed fixtures."""
import json
import re

import pytest
from lm_eval.api.model import LM

from path_eval.errors import PathEvalError
from path_eval.models.identity import tokenizer_sha256
from path_eval.results import load_records
from path_eval.suites import load_suite
from path_eval.tasks.frozen import frozen_paths, read_frozen
from path_eval.tasks.generated import build_generated_task
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER
from tests.helpers import fixture_data, run_cli, save_tiny_model


class OracleLM(LM):
    """Answers NIAH by finding each queried key's needle, PhoneBook by looking the name up."""

    def __init__(self, wrong: bool = False):
        super().__init__()
        self.wrong = wrong
        self.prompts = []

    def answer(self, prompt: str) -> str:
        if prompt.endswith(":") and "special magic" not in prompt:  # PhoneBook: "...\n\n{name}:"
            name = prompt.rsplit("\n", 1)[1][:-1]
            number = re.search(rf"^{re.escape(name)}: (\d{{10}})$", prompt, re.M).group(1)
            return ("0" if self.wrong else "") + number + "\nJohn Doe: 6000000000"
        query = re.search(r"What (?:are all the|is the) special magic \w+ for (.+?) mentioned", prompt).group(1)
        keys = re.split(r", and |, ", query)
        values = [v for k in keys for v in re.findall(rf"special magic \w+ for {re.escape(k)} is: (\S+)\.", prompt)]
        return "nothing" if self.wrong else " " + ", ".join(values) + "."

    def generate_until(self, requests, disable_tqdm=False):
        self.prompts += [r.args[0] for r in requests]
        return [self.answer(r.args[0]) for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Frozen samples of these tests go to a fresh cache, inherited by the CLI subprocesses."""
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return fixture_data(tmp_path_factory.mktemp("data"), "ruler_qa_1", "ruler_qa_2", ESSAYS_FOLDER)


def evaluate(lm, tasks):
    import lm_eval

    from tests.helpers import full_task_manager

    return lm_eval.simple_evaluate(model=lm, tasks=[t.config for t in tasks], task_manager=full_task_manager(),
                                   log_samples=True, bootstrap_iters=0)


@pytest.mark.parametrize("wrong, expected", [(False, 1.0), (True, 0.0)])
def test_oracle_scores_through_lm_eval(tokenizer, data_dir, tmp_path, wrong, expected):
    ruler, phonebook = load_suite("ruler"), load_suite("phonebook")
    specs = [ruler.task(n) for n in ("niah_single_1", "niah_single_2", "niah_multikey_3", "niah_multivalue",
                                     "niah_multiquery")] + [phonebook.task("phonebook")]
    tasks = [build_generated_task(spec, 2048, 7, tokenizer, tokenizer_sha256(tokenizer), 3, data_dir, "s",
                                  frozen_root=tmp_path) for spec in specs]
    oracle = OracleLM(wrong)
    output = evaluate(oracle, tasks)
    for task in tasks:
        metric = task.spec.metrics[0].name
        assert output["results"][task.name][f"{metric},none"] == expected, task.name
        docs = read_frozen(task.files[0])
        assert len(docs) == 3
        # the model is given the prompt with its answer prefix, nothing else
        assert sorted(d["input"] + d["answer_prefix"] for d in docs) == sorted(
            s["arguments"][0][0] for s in output["samples"][task.name])
        kwargs = output["samples"][task.name][0]["arguments"][0][1]
        assert kwargs["max_gen_toks"] == (20 if task.spec.generator == "phonebook" else 128)
        assert kwargs["do_sample"] is False


def test_frozen_samples_are_reused_and_checked_against_their_key(tokenizer, data_dir, tmp_path, caplog):
    spec = load_suite("ruler").task("niah_single_2")
    build = lambda tok_hash: build_generated_task(spec, 2048, 3, tokenizer, tok_hash, 2, data_dir, "s",  # noqa: E731
                                                  frozen_root=tmp_path)
    first = build(tokenizer_sha256(tokenizer))
    frozen = first.files[0]
    stamp = frozen.stat().st_mtime_ns
    assert build(tokenizer_sha256(tokenizer)).files[0] == frozen and frozen.stat().st_mtime_ns == stamp
    key = json.loads(frozen.with_suffix("").with_suffix(".key.json").read_text())["key"]
    assert key["task"] == "ruler/niah_single_2" and key["length"] == 2048 and key["seed"] == 3
    assert key["generator_version"] and key["data_fingerprint"]
    # another tokenizer (hash) never reuses these samples: another file
    assert build("0" * 64).files[0] != frozen
    # an edited frozen file is detected and regenerated, byte-identical to the first generation
    original = frozen.read_bytes()
    frozen.write_text(frozen.read_text().replace("special magic", "special tragic", 1))
    assert build(tokenizer_sha256(tokenizer)).files[0] == frozen
    assert frozen.read_bytes() == original
    assert "do not match their key" in caplog.text
    # a key file that describes other samples is not trusted either
    samples, key_file = frozen_paths(key, tmp_path)
    assert samples == frozen and key_file.is_file()
    stored = json.loads(key_file.read_text())
    key_file.write_text(json.dumps(stored | {"samples_sha256": "0" * 64}))
    caplog.clear()
    assert build(tokenizer_sha256(tokenizer)).files[0] == frozen
    assert "do not match their key" in caplog.text and json.loads(key_file.read_text()) == stored


@pytest.mark.slow
def test_ruler_suite_at_4k_offline(tmp_path, data_dir):
    model = save_tiny_model(tmp_path / "model", "path_fox")
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "ruler", "--lengths", "4k", "--limit", "1", "--model", str(model),
                     "--data-dir", str(data_dir), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    records = load_records(out)
    tasks = {r.task for r in records if r.length == 4096}
    assert {"niah_single_1", "vt", "cwe", "fwe", "qa_1", "qa_2", "ruler_13", "ruler_11", "single_niah",
            "multi_niah", "aggregation", "qa"} <= tasks
    per_task = {r.task: r for r in records if r.metric in ("string_match_all", "string_match_part")}
    assert len(per_task) == 13 and all(0 <= r.value <= 1 and r.n == 1 for r in per_task.values())
    ruler_13 = next(r for r in records if r.task == "ruler_13")
    assert ruler_13.value == pytest.approx(sum(r.value for r in per_task.values()) / 13)
    assert per_task["qa_1"].metric == "string_match_part"
    logged = [json.loads(line) for line in (out / "samples" / "model" / "niah_single_1_4096_s1234.jsonl").open()]
    assert len(logged) == 1 and logged[0]["doc"]["length"] <= 4096
    # the same command again: the frozen samples give the same prompts, so every answer comes from the cache
    again = run_cli("run", "--suite", "ruler", "--lengths", "4k", "--limit", "1", "--model", str(model),
                    "--data-dir", str(data_dir), "--out", str(out), "--quiet")
    assert again.returncode == 0, again.stderr[-3000:]
    rerun = load_records(out)
    assert [(r.task, r.metric, r.value) for r in rerun] == [(r.task, r.metric, r.value) for r in records]
    assert rerun[0].provenance.requests_computed == 0


def test_ruler_without_qa_data_reports_the_11_task_mean_only(tmp_path):
    model = save_tiny_model(tmp_path / "model", "path_fox")
    data = fixture_data(tmp_path / "data", ESSAYS_FOLDER)
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "ruler", "--lengths", "2k", "--limit", "1", "--model", str(model),
                     "--data-dir", str(data), "--out", str(out), "--quiet",
                     "--tasks", "niah_single_1,niah_single_2,niah_single_3,qa_1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "qa_1 skipped" in result.stderr + result.stdout
    tasks = {r.task for r in load_records(out)}
    assert "qa_1" not in tasks and "ruler_13" not in tasks and "single_niah" in tasks


def test_phonebook_suite_reports_mean_and_spread_over_seeds(tmp_path):
    model = save_tiny_model(tmp_path / "model", "path_fox")
    out = tmp_path / "run"
    result = run_cli("run", "--suite", "phonebook", "--lengths", "1k", "--limit", "2", "--model", str(model),
                     "--data-dir", str(tmp_path), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    [record] = [r for r in load_records(out) if r.task == "phonebook"]
    assert record.length == 1024 and record.seeds == 3 and record.n == 6 and record.seed_std is not None
    seed_files = sorted((out / "samples" / "model").glob("phonebook_1024_s*.jsonl"))
    assert [f.name for f in seed_files] == [f"phonebook_1024_s{s}.jsonl" for s in (1234, 1235, 1236)]


def test_essays_missing_is_one_line_with_the_fix(tmp_path):
    model = save_tiny_model(tmp_path / "model", "path_fox")
    result = run_cli("run", "--suite", "ruler", "--lengths", "4k", "--tasks", "niah_single_2", "--model", str(model),
                     "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "run"))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "essays" in line and "download" in line
    assert not (tmp_path / "run" / "results.json").exists()


def test_length_too_short_is_a_user_error(tokenizer, data_dir, tmp_path):
    spec = load_suite("ruler").task("niah_single_1")
    with pytest.raises(PathEvalError, match="longer length"):
        build_generated_task(spec, 100, 1, tokenizer, "x", 1, data_dir, "s", frozen_root=tmp_path)
