"""The suite stage on its own: every built-in suite validates, lengths parse as the docs say, and a
malformed suite is one line naming where it is wrong."""
import pytest

from path_eval.errors import PathEvalError
from path_eval.suites import LengthBuckets, available_suites, load_suite, parse_length


@pytest.mark.parametrize("name", available_suites())
def test_every_built_in_suite_validates(name):
    suite = load_suite(name)
    assert suite.name == name and suite.tasks
    assert suite.lengths == sorted(set(suite.lengths)) and all(length >= 0 for length in suite.lengths)


@pytest.mark.parametrize("text, tokens", [(4096, 4096), ("4096", 4096), ("4k", 4096), ("4K", 4096), (" 16k ", 16384),
                                          ("0k", 0)])
def test_lengths_parse_as_tokens(text, tokens):
    assert parse_length(text) == tokens


@pytest.mark.parametrize("text", ["four", "4m", "k", ""])
def test_a_length_that_is_not_a_number_is_one_line(text):
    with pytest.raises(PathEvalError, match="is not a number of tokens"):
        parse_length(text)


def test_length_buckets_follow_their_edges():
    buckets = LengthBuckets(field="length", edges=[4000, 8000], labels=["0-4k", "4-8k", "8k+"])
    assert [buckets.label(v) for v in (0, 3999, 4000, 7999, 8000, 10**6)] == ["0-4k", "0-4k", "4-8k", "4-8k",
                                                                                  "8k+", "8k+"]


MALFORMED = {
    "unknown key": ("name: s\ndescription: d\ncolour: red\ntasks: [{name: piqa, lm_eval_task: piqa, metrics: [acc]}]\n",
                    "colour"),
    "two task kinds": ("name: s\ndescription: d\ntasks: [{name: t, lm_eval_task: piqa, generator: phonebook, "
                       "metrics: [acc]}]\n", "exactly one of lm_eval_task, generator, corpus, flipflop, a5, mqrar, code and theoremqa"),
    "no tasks": ("name: s\ndescription: d\ntasks: []\n", "tasks"),
    "repeated task": ("name: s\ndescription: d\ntasks: [{name: t, lm_eval_task: piqa, metrics: [acc]}, "
                      "{name: t, lm_eval_task: arc_easy, metrics: [acc]}]\n", "task names repeat"),
    "aggregate of nothing": ("name: s\ndescription: d\ntasks: [{name: t, lm_eval_task: piqa, metrics: [acc]}]\n"
                             "aggregates: [{name: avg, metric: score, mean_of: [t/acc_norm]}]\n", "t/acc_norm"),
    "bad buckets": ("name: s\ndescription: d\nlength_buckets: {field: length, edges: [8000, 4000], labels: [a, b, c]}\n"
                    "tasks: [{name: t, lm_eval_task: piqa, metrics: [acc]}]\n", "edges must increase"),
    "not yaml": ("name: [unclosed\n", "not valid YAML"),
    "flip-flop with another metric": ("name: s\ndescription: d\ntasks: [{name: f, flipflop: {p_ignore: 0.8}, "
                                      "lengths: [512], metrics: [acc]}]\n", "reports the flipflop_error metric only"),
    "p_ignore not a probability": ("name: s\ndescription: d\ntasks: [{name: f, flipflop: {p_ignore: 1.5}, "
                                   "metrics: [flipflop_error]}]\n", "tasks.0.flipflop.p_ignore"),
    "a task length that is not one": ("name: s\ndescription: d\ntasks: [{name: f, flipflop: {p_ignore: 0.8}, "
                                      "lengths: [lots], metrics: [flipflop_error]}]\n", "'lots' is not a number"),
    "extends no built-in suite": ("extends: nope\nname: s\n", "extends 'nope', which is not a built-in suite"),
    "a BABILong sample set that is none": ("extends: babilong\nname: s\nbabilong: {sample_set: 10k}\n",
                                           "babilong.sample_set"),
    "data without hf_path outside BABILong": ("name: s\ndescription: d\ntasks: [{name: t, generator: ruler/qa_1, "
                                              "data: {split: validation}, metrics: [string_match_all]}]\n",
                                              "data needs hf_path"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_suite_is_one_line_naming_the_problem(tmp_path, case):
    text, fragment = MALFORMED[case]
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    with pytest.raises(PathEvalError) as raised:
        load_suite(str(path))
    message = str(raised.value)
    assert fragment in message and "\n" not in message


def test_an_unknown_suite_names_the_known_ones():
    with pytest.raises(PathEvalError, match="unknown suite 'nope': choose one of .*ruler"):
        load_suite("nope")


def test_a_suite_extends_a_built_in_one_key_by_key(tmp_path):
    """Top-level keys of the file replace the base suite's; the rest (tasks, aggregates) are the base's."""
    path = tmp_path / "variant.yaml"
    path.write_text("extends: babilong\nname: variant\ndescription: d\nbabilong: {sample_set: 100, examples: false}\n")
    variant, base = load_suite(str(path)), load_suite("babilong")
    assert (variant.name, variant.description) == ("variant", "d")
    assert (variant.babilong.sample_set, variant.babilong.examples, variant.babilong.instruction) == ("100", False, True)
    assert variant.tasks == base.tasks and variant.aggregates == base.aggregates and variant.lengths == base.lengths
    assert load_suite("babilong_regenerated").babilong.source == "regenerated"


# One task of each kind, and the options a suite may give it (what its evaluator and task module read).
KIND_TASKS = {"lm_eval": {"lm_eval_task": "lambada_openai", "metrics": ["acc"]},
              "generated": {"generator": "ruler/niah_single_1", "metrics": ["string_match_all"]},
              "corpus": {"corpus": {"package_file": "zoo/heldout/jack_sheppard_tail.txt"}, "metrics": ["perplexity"]},
              "flipflop": {"flipflop": {"p_ignore": 0.8}, "metrics": ["flipflop_error"]}}
OPTIONS = {"num_fewshot": 3, "samples": 5, "seeds": 2, "stop": ["\n"], "data": {"hf_path": "org/rows"},
           "adapter": "longbench", "prompt_edits": [{"old": "a", "new": "b"}]}
READ = {"lm_eval": {"num_fewshot", "data"}, "generated": {"samples", "seeds", "stop", "data"}, "corpus": set(),
        "flipflop": {"samples", "seeds"}}


@pytest.mark.parametrize("kind, option", [(kind, option) for kind in KIND_TASKS for option in OPTIONS
                                          # an adapted lm-eval task's own options: tests/suites/test_longbench_suite.py
                                          if (kind, option) not in {("lm_eval", "adapter"), ("lm_eval", "prompt_edits"),
                                                                    ("lm_eval", "stop")}])
def test_an_option_the_kind_does_not_read_is_refused(kind, option):
    from path_eval.suites import TaskSpec

    task = {"name": "t", **KIND_TASKS[kind], option: OPTIONS[option]}
    if option in READ[kind]:
        assert TaskSpec.model_validate(task).kind == kind
    else:
        with pytest.raises(ValueError, match=f"a {kind} task does not read {option}: remove it"):
            TaskSpec.model_validate(task)


def test_stop_sequences_of_a_plain_lm_eval_task_are_refused():
    from path_eval.suites import TaskSpec

    with pytest.raises(ValueError, match="stops where its own config says"):
        TaskSpec.model_validate({"name": "t", **KIND_TASKS["lm_eval"], "stop": ["\n"]})
