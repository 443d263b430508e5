"""BABILong through lm-eval with the `babilong` adapter: the prompt the model is given (the original's
layout, written out here: instruction, examples, post-prompt, tagged context, question), generation
options, one task and record per length with qa1-qa5's mean per length, and the data errors."""
import json

import lm_eval
import pytest
from lm_eval.api.model import LM

from path_eval.errors import PathEvalError
from path_eval.evaluators.lm_eval import results_from_output
from path_eval.results.records import aggregate, task_records
from path_eval.suites import BabilongOptions, load_suite
from path_eval.tasks import build_task
from path_eval.tasks.lm_eval_tasks import lm_eval_config
from tests.helpers import BABILONG_FILLER, PROVENANCE, full_task_manager, write_babilong

LENGTHS = (0, 4096)


class AnswerLM(LM):
    """Answers with the doc's target in a sentence, then a second sentence naming another room, if
    `knows` accepts the doc, else names two rooms; records the requests."""

    def __init__(self, knows):
        super().__init__()
        self.knows = knows
        self.requests = []

    def generate_until(self, requests, disable_tqdm=False):
        self.requests += requests
        return [f"The answer is {r.doc['target']}. Not the cellar." if self.knows(r.doc)
                else "The bathroom or the hallway." for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


@pytest.fixture(scope="module")
def suite():
    return load_suite("babilong")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, suite):
    """qa1-qa5 at 0k and 4k, with a model that knows the first row of each task at 0k only."""
    data = write_babilong(tmp_path_factory.mktemp("data"))
    tasks = [build_task(t, data, suite, n) for t in suite.tasks for n in LENGTHS]
    model = AnswerLM(knows=lambda doc: BABILONG_FILLER not in doc["input"] and doc["question"] in FIRST_QUESTIONS)
    output = lm_eval.simple_evaluate(model=model, tasks=[t.config for t in tasks], task_manager=full_task_manager(),
                                     log_samples=True, bootstrap_iters=0)
    return tasks, model, output


FIRST_QUESTIONS = {"Where is Mary?", "Where is the milk?", "Where was the apple before the kitchen?",
                   "What is the kitchen east of?", "Who did Fred give the football to?"}


def test_one_task_per_length_reading_that_lengths_config(evaluated):
    tasks, _, _ = evaluated
    assert [t.name for t in tasks[:2]] == ["qa1_0", "qa1_4096"]
    assert [str(t.files[0]).split("RMT-team/")[1] for t in tasks[:2]] == ["babilong-1k-samples/0k/qa1.jsonl",
                                                                          "babilong-1k-samples/4k/qa1.jsonl"]


def test_prompts_have_the_original_layout(evaluated):
    """lm-eval's description is instruction + newline + post-prompt; its few-shot samples are the
    examples: here they are laid out the original's way, without lm-eval's few-shot turns."""
    tasks, model, _ = evaluated
    assert len(model.requests) == 5 * 2 * 2
    for request in model.requests:
        prompt, options = request.args
        assert options["until"] == [] and options["max_gen_toks"] == 20 and options["do_sample"] is False
    raw = lm_eval_config("babilong_qa4", resolve_functions=False)  # qa4: lm-eval's text equals the original's
    instruction, post_prompt = raw["description"].strip().split("\n")
    examples = "\n".join(f"<example>\n{s['input']} {s['question']}\nAnswer: {s['target']}\n</example>"
                         for s in raw["fewshot_config"]["samples"])
    request = next(r for r in model.requests if r.doc["question"] == "What is north of the hallway?")
    doc = request.doc
    assert request.args[0] == (f"{instruction}\n\n{examples}\n\n{post_prompt}\n\n<context>\n{doc['input'].strip()}\n"
                               f"</context>\n\nQuestion: {doc['question']}")


def test_the_suites_edits_give_the_originals_words(evaluated):
    _, model, _ = evaluated
    prompts = {r.doc["question"]: r.args[0] for r in model.requests}
    qa1, qa2 = prompts["Where is Mary?"], prompts["Where is the milk?"]
    assert "balcony.\n</example>\n\n<example>\n" in qa1
    assert "format: The most recent location of ’person’ is ’location’. Do not" in qa1
    assert qa2.startswith("I give you context") and "a question.You need" in qa2 and "facts.\nIf a person" in qa2
    assert "format: The ’item’ is in ’location’." in qa2
    assert "facts.\nIf a person" in prompts["Where was the apple before the kitchen?"]


def test_records_per_length_and_the_mean_of_the_five_tasks(evaluated, suite, tmp_path):
    tasks, _, output = evaluated
    info = {k: v for k, v in PROVENANCE.items() if k not in ("data_fingerprint", "data_files", "num_fewshot")}
    records = task_records(suite, "m", results_from_output(tasks, output, tmp_path / "samples"), info)
    records += aggregate(suite, records)
    found = {(r.task, r.length, r.metric): (r.value, r.n) for r in records}
    for task in ("qa1", "qa2", "qa3", "qa4", "qa5"):
        # the known row: its answer alone in the first sentence; the other: two rooms (qa5: no answer word)
        assert found[(task, 0, "babilong_accuracy")] == (0.5, 2)
        assert found[(task, 4096, "babilong_accuracy")] == (0.0, 2)
    # "The bathroom or the hallway." holds qa1's second target (hallway) as a substring, no other's
    assert [found[(t, 0, "target_substring")][0] for t in ("qa1", "qa2", "qa3", "qa4", "qa5")] == [1.0] + [0.5] * 4
    assert found[("babilong", 0, "score")] == (pytest.approx(0.5), 10)
    assert found[("babilong", 4096, "score")] == (0.0, 10)
    assert found[("babilong_substring", 0, "score")][0] == pytest.approx(3 / 5)
    logged = [json.loads(line) for line in (tmp_path / "samples" / "qa3_4096.jsonl").open()]
    assert len(logged) == 2 and set(logged[0]["scores"]) == {"babilong_accuracy", "target_substring"}
    # the suite's BABILong choices are in every record's provenance; hub rows carry no data-source label
    assert {(r.provenance.data_source, r.provenance.sample_set, tuple(r.provenance.prompt_parts), r.data_source)
            for r in records} == {("hub", "1k", ("instruction", "examples", "post_prompt"), None)}


def with_options(suite, **options):
    """The suite with these `babilong:` options, validated as a suite file's are."""
    return suite.model_copy(update={"babilong": BabilongOptions.model_validate(suite.babilong.model_dump() | options)})


def test_each_prompt_switch_removes_exactly_its_part(suite, tmp_path):
    """qa4 (lm-eval's text is the original's): with a part off, the prompt is the original's template
    with that part empty (its blank lines stay), stripped; the provenance lists the parts left on."""
    data = write_babilong(tmp_path, lengths=("0k",), tasks=("qa4",))
    raw = lm_eval_config("babilong_qa4", resolve_functions=False)
    instruction, post_prompt = raw["description"].strip().split("\n")
    examples = "\n".join(f"<example>\n{s['input']} {s['question']}\nAnswer: {s['target']}\n</example>"
                         for s in raw["fewshot_config"]["samples"])
    doc = {"input": " Some facts. ", "question": "What is north of the hallway?", "target": "bedroom"}
    tail = "<context>\nSome facts.\n</context>\n\nQuestion: What is north of the hallway?"
    expected = {(): f"{instruction}\n\n{examples}\n\n{post_prompt}\n\n{tail}",
                ("instruction",): f"{examples}\n\n{post_prompt}\n\n{tail}",
                ("examples",): f"{instruction}\n\n\n\n{post_prompt}\n\n{tail}",
                ("post_prompt",): f"{instruction}\n\n{examples}\n\n\n\n{tail}",
                ("instruction", "examples", "post_prompt"): tail}
    for off, prompt in expected.items():
        task = build_task(suite.task("qa4"), data, with_options(suite, **{part: False for part in off}), 0)
        assert task.config["doc_to_text"](doc) == prompt, off
        assert task.protocol["prompt_parts"] == [p for p in ("instruction", "examples", "post_prompt") if p not in off]


def test_sample_sets_per_length_and_the_1k_set_beyond_32k(suite, tmp_path):
    """Unset: the 1k set up to 32k, the 100-sample set above; `100` asked: RMT-team/babilong at 4k
    too; `1k` asked at 64k: one line naming the fix."""
    write_babilong(tmp_path, lengths=("4k", "32k"), tasks=("qa1",))
    write_babilong(tmp_path, lengths=("4k", "64k"), tasks=("qa1",), hub_set="RMT-team/babilong")
    spec = suite.task("qa1")
    chosen = {n: build_task(spec, tmp_path, suite, n).files[0].relative_to(tmp_path).parts[1]
              for n in (4096, 32768, 65536)}
    assert chosen == {4096: "babilong-1k-samples", 32768: "babilong-1k-samples", 65536: "babilong"}
    hundred = build_task(spec, tmp_path, with_options(suite, sample_set=100), 4096)
    assert hundred.files == [tmp_path / "RMT-team/babilong/4k/qa1.jsonl"] and hundred.protocol["sample_set"] == "100"
    with pytest.raises(PathEvalError) as error:
        build_task(spec, tmp_path, with_options(suite, sample_set="1k"), 65536)
    message = str(error.value)
    assert "\n" not in message and "1k sample set (RMT-team/babilong-1k-samples)" in message
    assert "not 64k" in message and "sample_set: 100" in message


def test_lengths_must_name_a_config(suite, tmp_path):
    with pytest.raises(PathEvalError, match=r"task qa1 reads one dataset config per length \(\{length_k\}k\): "
                                            r"run it at multiples of 1024 tokens .*not 1000"):
        build_task(suite.task("qa1"), tmp_path, suite, 1000)


def test_missing_data_names_the_file_and_the_download(suite, tmp_path):
    write_babilong(tmp_path, lengths=("0k",))
    with pytest.raises(PathEvalError) as error:
        build_task(suite.task("qa2"), tmp_path, suite, 8192)
    message = str(error.value)
    assert "RMT-team/babilong-1k-samples/8k/qa2.jsonl" in message and "download --suite babilong" in message
    assert "\n" not in message


def test_download_fetches_every_lengths_config(tmp_path, monkeypatch):
    import datasets

    from path_eval.cli import main

    calls = []
    row = {"input": "x", "question": "q", "target": "t"}
    monkeypatch.setattr(datasets, "load_dataset", lambda path, name=None, split=None, **kw: (
        calls.append((path, name, split)) or datasets.Dataset.from_list([row])))
    assert main(["download", "--suite", "babilong", "--tasks", "qa1", "--data-dir", str(tmp_path)]) == 0
    assert calls == [("RMT-team/babilong-1k-samples", n, "qa1") for n in ("0k", "4k", "8k", "16k")]
    assert (tmp_path / "RMT-team/babilong-1k-samples/16k/qa1.jsonl").is_file()


def test_a_length_beyond_the_suite_downloads_with_lengths(suite, tmp_path, monkeypatch):
    """64k is not one of the suite's lengths: the error names `--lengths 65536`, and that download
    fetches exactly the 64k config, from the 100-sample set (the originals' set above 32k)."""
    import datasets

    from path_eval.cli import main

    with pytest.raises(PathEvalError, match="download --suite babilong --lengths 65536 --data-dir"):
        build_task(suite.task("qa1"), tmp_path, suite, 65536)
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda path, name=None, split=None, **kw: (
        calls.append((path, name, split)) or datasets.Dataset.from_list([{"input": "x", "question": "q", "target": "t"}])))
    assert main(["download", "--suite", "babilong", "--tasks", "qa1", "--lengths", "32k,65536",
                 "--data-dir", str(tmp_path)]) == 0
    assert calls == [("RMT-team/babilong-1k-samples", "32k", "qa1"), ("RMT-team/babilong", "64k", "qa1")]
    assert build_task(suite.task("qa1"), tmp_path, suite, 65536).files == [tmp_path / "RMT-team/babilong/64k/qa1.jsonl"]


def test_regenerated_rows_are_labelled_and_never_share_a_cell(evaluated, suite, tmp_path, monkeypatch):
    """babilong_regenerated reads rows it makes from the committed bAbI and book excerpts: its records
    say `regenerated` (record and provenance), aggregate apart from the hub's, and the suite's table
    gives them their own row, "m (regenerated)", beside the hub's "m"."""
    from path_eval.reports.tables import suite_table
    from tests.helpers import FIXTURE_DATA

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    regenerated = load_suite("babilong_regenerated")
    tasks = [build_task(t, FIXTURE_DATA, regenerated, n, limit=1) for t in regenerated.tasks for n in LENGTHS]
    assert tasks[1].files[0].is_relative_to(tmp_path / "cache" / "frozen" / "babilong" / "qa1")
    assert any(f.name.startswith("qa1_") and f.suffix == ".txt" for f in tasks[1].files)
    output = lm_eval.simple_evaluate(model=AnswerLM(knows=lambda doc: True), tasks=[t.config for t in tasks],
                                     task_manager=full_task_manager(), log_samples=True, bootstrap_iters=0)
    info = {k: v for k, v in PROVENANCE.items() if k not in ("data_fingerprint", "data_files", "num_fewshot")}
    made = task_records(regenerated, "m", results_from_output(tasks, output, tmp_path / "samples"), info)
    assert {(r.data_source, r.provenance.data_source, r.provenance.sample_set, r.n) for r in made} == \
        {("regenerated", "regenerated", "1k", 1)}
    hub_tasks, _, hub_output = evaluated
    hub = task_records(suite, "m", results_from_output(hub_tasks, hub_output, tmp_path / "hub"), info)
    both = made + hub
    means = [r for r in aggregate(suite, both) if r.task == "babilong"]
    assert {(r.data_source, r.length, r.n) for r in means} == \
        {("regenerated", 0, 5), ("regenerated", 4096, 5), (None, 0, 10), (None, 4096, 10)}
    _, rows, _ = suite_table(both + means, suite)
    assert {row[0] for row in rows} == {"m", "m (regenerated)"}
    accuracy = {row[0]: row[2:] for row in rows if row[1] == "BABILong (qa1-qa5) score"}
    assert accuracy["m (regenerated)"] == ["100.0", "100.0"] and accuracy["m"] == ["50.0", "0.0"]
