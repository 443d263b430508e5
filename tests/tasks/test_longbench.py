"""LongBench-E through lm-eval with the `longbench` adapter: the prompts the model is given, the
generation options, scoring (first-line cut, best answer), length buckets and their averages, and
the missing-data error. Expected texts are written from the original's prompt format (dataset2prompt:
examples and question one blank line apart for triviaqa and samsum, "Next line of code:" then a
newline for the code sets, a trailing space after "The answer is:"), not taken from our code."""
import json

import lm_eval
import pytest
from lm_eval.api.model import LM

from path_eval.errors import PathEvalError
from path_eval.evaluators.lm_eval import results_from_output
from path_eval.kinds.lm_eval import check_room_for_generation
from path_eval.results.records import aggregate, task_records
from path_eval.suites import PromptEdit, load_suite
from path_eval.tasks import build_task
from tests.helpers import LONGBENCH_LENGTHS, PROVENANCE, full_task_manager, write_longbench_e

# DESIGN.md §4.4: the original's max new tokens
MAX_NEW_TOKENS = {"qasper": 128, "multifieldqa_en": 64, "hotpotqa": 32, "2wikimqa": 32, "gov_report": 512,
                  "multi_news": 512, "trec": 64, "triviaqa": 32, "samsum": 128, "lcc": 64, "repobench-p": 64,
                  "passage_count": 32, "passage_retrieval_en": 32}
FIRST_LINE_ONLY = {"trec", "triviaqa", "samsum"}
# Words of the short docs' first answers after SQuAD normalisation ("The Reds" -> "reds").
NORMALISED_ANSWER_WORDS = {"2wikimqa": 2, "hotpotqa": 1, "multifieldqa_en": 2, "qasper": 1}


class AnswerLM(LM):
    """Answers each doc with its first answer (after two newlines, followed by a second line) if the
    `knows` predicate accepts the doc, else with nothing; records the requests."""

    def __init__(self, knows=lambda doc: True):
        super().__init__()
        self.knows = knows
        self.requests = []

    def generate_until(self, requests, disable_tqdm=False):
        self.requests += requests
        return [f"\n\n{r.doc['answers'][0]}\nand more words here" if self.knows(r.doc) else "" for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return write_longbench_e(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def suite():
    """Under THUDM's rule (the FoX rule, the suite's own, is checked in tests/metrics and tests/results)."""
    return load_suite("longbench_e").with_longbench_rule("thudm")


@pytest.fixture(scope="module")
def evaluated(data_dir, suite):
    """Every task of the suite, through lm-eval, with a model that knows only the short docs."""
    tasks = [build_task(t, data_dir, suite) for t in suite.tasks]
    model = AnswerLM(knows=lambda doc: doc["length"] < 4000)
    output = lm_eval.simple_evaluate(model=model, tasks=[t.config for t in tasks], task_manager=full_task_manager(),
                                     log_samples=True, bootstrap_iters=0)
    return tasks, model, output


def test_prompts_follow_the_original_format(evaluated):
    tasks, model, _ = evaluated
    assert len({r.doc["_id"] for r in model.requests}) == len(model.requests) == 13 * 3
    for request in model.requests:
        prompt, options = request.args
        assert options["until"] == [] and options["do_sample"] is False
        assert options["max_gen_toks"] == MAX_NEW_TOKENS[request.doc["dataset"]]
        assert options["truncate_middle"] == 15500 and request.doc["context"] in prompt
    by_dataset = {r.doc["dataset"]: (r.args[0], r.doc) for r in model.requests if r.doc["length"] == LONGBENCH_LENGTHS[0]}
    prompt, doc = by_dataset["triviaqa"]
    assert prompt.endswith(f"{doc['context']}\n\n{doc['input']}")
    prompt, doc = by_dataset["samsum"]
    assert prompt.endswith(f"{doc['context']}\n\n{doc['input']}")
    prompt, doc = by_dataset["trec"]
    assert prompt.endswith(f"{doc['context']}\n{doc['input']}")
    prompt, doc = by_dataset["2wikimqa"]
    assert prompt.endswith(f"Question: {doc['input']}\nAnswer:")
    prompt, doc = by_dataset["repobench-p"]
    assert prompt.endswith(f"{doc['context']}{doc['input']}Next line of code:\n")
    assert by_dataset["lcc"][0].endswith("Next line of code:\n")
    assert by_dataset["passage_count"][0].endswith("The final answer is: ")
    assert by_dataset["passage_retrieval_en"][0].endswith("The answer is: ")
    # the rest of each prompt is lm-eval's own template text
    for task in tasks:
        template = full_task_manager().task_index[task.spec.lm_eval_task].cfg["doc_to_text"]
        assert by_dataset[task.spec.name][0].startswith(template.split("{{")[0])


def test_scores_take_the_first_line_only_where_the_original_does(evaluated):
    tasks, _, output = evaluated
    for task in tasks:
        metric = task.spec.metrics[0].name
        for sample in output["samples"][task.name]:
            short = sample["doc"]["length"] < 4000
            if not short:
                assert sample[metric] == 0.0, task.spec.name
            elif task.spec.name in FIRST_LINE_ONLY or metric in ("code_sim_score",):
                assert sample[metric] == pytest.approx(1.0), task.spec.name  # "\n\n" answer "\n" more...
            elif metric == "qa_f1_score":  # the whole generation counts: the answer's words + 4 more
                words = NORMALISED_ANSWER_WORDS[task.spec.name]
                assert sample[metric] == pytest.approx(2 * words / (2 * words + 4)), task.spec.name


def test_bucket_scores_and_their_average(evaluated, suite, tmp_path):
    """Per dataset the mean per length bucket (x100, rounded to 2 decimals: THUDM's eval.py rounds
    every cell); per bucket the plain mean over the 11 datasets."""
    tasks, _, output = evaluated
    info = {k: v for k, v in PROVENANCE.items() if k not in ("data_fingerprint", "data_files", "num_fewshot")}
    records = task_records(suite, "m", results_from_output(tasks, output, tmp_path / "samples"), info)
    records += aggregate(suite, records)
    trec = {r.length_bucket: r for r in records if r.task == "trec"}
    assert {k: (v.value, v.n) for k, v in trec.items()} == {None: (pytest.approx(0.3333, abs=1e-15), 3), "0-4k": (1.0, 1),
                                                            "4-8k": (0.0, 1), "8k+": (0.0, 1)}
    assert trec["0-4k"].provenance.truncate_middle == 15500
    average = {r.length_bucket: r.value for r in records if r.task == "longbench_e"}
    part_means = [next(r.value for r in records if r.task == t and r.length_bucket == "0-4k")
                  for t in ("2wikimqa", "hotpotqa", "multifieldqa_en", "qasper", "multi_news", "gov_report", "trec",
                            "triviaqa", "samsum", "lcc", "repobench-p")]
    assert average["0-4k"] == pytest.approx(sum(part_means) / 11) and average["0-4k"] > 0.5
    assert average["4-8k"] == 0.0 and average["8k+"] == 0.0
    logged = [json.loads(line) for line in (tmp_path / "samples" / "trec.jsonl").open()]
    assert [row["doc"]["length"] for row in logged] == list(LONGBENCH_LENGTHS) and "classification_score" in logged[0]["scores"]


def test_bucket_edges_count_words_as_the_original():
    buckets = load_suite("longbench_e").length_buckets
    assert [buckets.label(n) for n in (0, 3999, 4000, 7999, 8000, 30000)] == ["0-4k", "0-4k", "4-8k", "4-8k",
                                                                              "8k+", "8k+"]


def test_a_prompt_edit_that_no_longer_matches_is_an_error(data_dir, suite):
    spec = suite.task("lcc").model_copy(update={"prompt_edits": [PromptEdit(old="Next line of cod3:", new="x")]})
    with pytest.raises(PathEvalError, match="matches 0 times"):
        build_task(spec, data_dir, suite)


def test_missing_data_names_the_file_and_the_download(tmp_path, suite):
    write_longbench_e(tmp_path, datasets={"2wikimqa"})
    with pytest.raises(PathEvalError) as error:
        build_task(suite.task("trec"), tmp_path, suite)
    message = str(error.value)
    assert "THUDM/LongBench/trec_e/test.jsonl" in message and "download --suite longbench_e" in message
    assert "\n" not in message


def test_the_context_must_hold_the_cut_prompt_and_the_new_tokens(evaluated):
    tasks, _, _ = evaluated
    check_room_for_generation(tasks, 16384)  # 15500 + 512 fit
    with pytest.raises(PathEvalError, match=r"gov_report: truncate_middle 15500 \+ 512 new tokens exceed max_length"):
        check_room_for_generation([t for t in tasks if t.spec.name == "gov_report"], 16000)
