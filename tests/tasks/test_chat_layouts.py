"""Generated and long-context tasks under a chat template, each against the original's chat layout
built independently: RULER's prompt is the tokenizer's template applied to a user message holding the
task template with its context (add_generation_prompt=True), then the answer prefix, within the length
budget by the same count; PhoneBook's prompt in the user turn; LongBench cut in the middle first and
wrapped after (pred.py); a wrapped run never reuses an unwrapped run's frozen samples. The checkpoint's
templates are read as transformers loads them, and a model without one is refused before loading."""
import json

import pytest

from path_eval.errors import PathEvalError
from path_eval.models.chat_template import ChatLayout, chat_templates, select_chat_template
from path_eval.tasks.ruler.templates import NIAH
from tests.chat_checkpoints import CHATML, INST, chat_llama, chat_zoo_model
from tests.helpers import run_cli, tokens

SYSTEM = "You are a careful reader."


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return chat_llama(tmp_path_factory.mktemp("chat-llama"))


@pytest.fixture(scope="module")
def chat_tokenizer(checkpoint):
    from path_eval.models.tokenizer import load_tokenizer

    return load_tokenizer(checkpoint)


def user_turn_of(tokenizer, text: str, system: str | None = None) -> str:
    """The original's layout: the tokenizer's own template on one user message (after a system one)."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


@pytest.mark.parametrize("system", [None, SYSTEM])
def test_ruler_prompt_is_the_task_template_in_the_user_turn_within_the_budget(chat_tokenizer, system):
    from path_eval.tasks.ruler.niah import SINGULAR_REPLACEMENTS, generate_niah

    length = 512
    samples = generate_niah("niah_single_1", length, chat_tokenizer, 7, 3, None,
                            layout=ChatLayout(chat_tokenizer, CHATML, system).user_turn)
    template, prefix = NIAH.template, NIAH.answer_prefix
    for old, new in SINGULAR_REPLACEMENTS:
        template, prefix = template.replace(old, new), prefix.replace(old, new)
    for sample in samples:
        head, tail = "afterwards.\n", "\nWhat is the special magic number for"
        context = sample.input[sample.input.index(head) + len(head):sample.input.index(tail)]
        query = sample.extra["queries"][0]
        fields = dict(type_needle_v="number", context=context, query=query)
        original = user_turn_of(chat_tokenizer, template.format(**fields), system) + prefix.format(**fields)
        assert sample.input + sample.answer_prefix == original
        assert sample.input.endswith("<|im_start|>assistant\n") and sample.input.startswith("<s><|im_start|>")
        counted = tokens(chat_tokenizer, original) + NIAH.tokens_to_generate
        assert counted == sample.length <= length
        assert sample.length > length - 100  # the haystack was grown to the budget, template included


@pytest.mark.parametrize("task, turns", [("vt", 1), ("cwe", 2), ("fwe", 1)])
def test_other_ruler_tasks_lay_out_as_the_original(chat_tokenizer, task, turns):
    """vt's example inside the one user turn (the original inserts it after the model template), cwe's
    solved example a turn of its own (the original formats it with the whole template), fwe's text in
    the user turn; each within the budget by the count of its laid-out prompt."""
    from path_eval.tasks.ruler import aggregation, variable_tracking

    make = {"vt": variable_tracking.generate_vt, "cwe": aggregation.generate_cwe, "fwe": aggregation.generate_fwe}[task]
    length = 1024
    for sample in make(length, chat_tokenizer, 5, 2, layout=ChatLayout(chat_tokenizer, CHATML).user_turn):
        assert sample.input.count("<|im_start|>user\n") == turns
        assert sample.input.endswith("<|im_end|>\n<|im_start|>assistant\n")
        last = sample.input.rsplit("<|im_start|>user\n", 1)[1].removesuffix("<|im_end|>\n<|im_start|>assistant\n")
        assert sample.input.endswith(user_turn_of(chat_tokenizer, last).removeprefix("<s>"))
        assert tokens(chat_tokenizer, sample.input + sample.answer_prefix) + sample.max_new_tokens == sample.length
        assert sample.length <= length
        if task == "vt":  # the example, then the task's own text, in the one turn
            assert last.count("Memorize and track the chain(s)") == 2 and last.startswith("Memorize")


def test_phonebook_prompt_is_the_user_turn(chat_tokenizer):
    from path_eval.tasks.phonebook import generate_phonebook

    for sample in generate_phonebook(400, chat_tokenizer, 3, 2, layout=ChatLayout(chat_tokenizer, CHATML).user_turn):
        inner = sample["input"].removeprefix("<s><|im_start|>user\n").removesuffix("<|im_end|>\n<|im_start|>assistant\n")
        assert sample["input"] == user_turn_of(chat_tokenizer, inner)
        book, examples, query = inner.split("\n\n")
        assert query.endswith(":") and f"{query} {sample['answer']}" in book.split("\n")
        assert tokens(chat_tokenizer, sample["input"]) + sample["max_new_tokens"] == sample["length"] <= 400


def test_frozen_sets_of_a_chat_run_are_not_a_base_runs(chat_tokenizer, tmp_path):
    from path_eval.models.identity import tokenizer_sha256
    from path_eval.suites import load_suite
    from path_eval.tasks.frozen import read_frozen
    from path_eval.tasks.generated import build_generated_task

    spec = load_suite("ci").task("niah_single_1")
    digest = tokenizer_sha256(chat_tokenizer)

    def frozen(chat):
        task = build_generated_task(spec, 512, 1234, chat_tokenizer, digest, 2, tmp_path, "ci", tmp_path / "frozen",
                                    chat=chat)
        return task.files[0]

    base, wrapped = frozen(None), frozen(ChatLayout(chat_tokenizer, CHATML))
    instructed = frozen(ChatLayout(chat_tokenizer, CHATML, SYSTEM))
    assert len({base, wrapped, instructed}) == 3
    assert not read_frozen(base)[0]["input"].startswith("<s>")
    assert read_frozen(wrapped)[0]["input"].startswith("<s><|im_start|>user\n")
    assert frozen(None) == base  # a base run's set keeps its key


def test_longbench_cuts_the_raw_prompt_then_wraps_it(checkpoint):
    from path_eval.lm import PathEvalLM

    lm = PathEvalLM(str(checkpoint), system_instruction=SYSTEM)
    prompt = "Read the report. " + " ".join(f"Paragraph {i} says the value is {i * 7}." for i in range(200)) + \
        " Question: what does paragraph 3 say? Answer:"
    keep = 64
    raw = lm.tok_encode(prompt)
    assert len(raw) > keep
    cut = lm.tok_decode(raw[:keep // 2]) + lm.tok_decode(raw[-keep // 2:])
    expected = lm.tok_encode(user_turn_of(lm.tokenizer, cut, SYSTEM))
    assert [tokens.tolist() for tokens in lm.prompt_tokens([(prompt, keep, True)])] == [expected]
    assert lm.tok_decode(expected, skip_special_tokens=False).startswith(
        f"<s><|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nRead the report.")
    assert lm.tok_decode(expected).endswith("Answer:<|im_end|>\n<|im_start|>assistant\n")
    # wrapping first would spend the kept tokens on the template's text: another prompt
    assert [tokens.tolist() for tokens in lm.prompt_tokens([(user_turn_of(lm.tokenizer, prompt, SYSTEM), keep,
                                                             False)])] != [expected]


def test_longbench_wraps_the_datasets_pred_py_wraps():
    from path_eval.suites import load_suite
    from path_eval.tasks import longbench

    suite = load_suite("longbench_e")
    wrapped = [t.name for t in suite.tasks if t.adapter == "longbench" and longbench.chat_wrapped(t)]
    assert "trec" not in wrapped and "lcc" not in wrapped and "hotpotqa" in wrapped and "passage_count" in wrapped
    config = {"generation_kwargs": {"until": [], "max_gen_toks": 32}}
    assert longbench.with_chat(config, suite.task("trec")) == config
    assert longbench.with_chat(config, suite.task("qasper"))["generation_kwargs"]["chat_user_turn"] is True


@pytest.mark.parametrize("form", ["string", "list", "jinja", "jinja and folder"])
def test_templates_are_read_as_transformers_loads_them(tmp_path, form):
    from transformers import AutoTokenizer

    path = chat_llama(tmp_path / form, chat_template=[{"name": "default", "template": CHATML},
                                                      {"name": "inst", "template": INST}] if form == "list" else CHATML)
    if form.startswith("jinja"):
        config = json.loads((path / "tokenizer_config.json").read_text())
        config["chat_template"] = INST  # the file wins, as in transformers
        (path / "tokenizer_config.json").write_text(json.dumps(config))
        (path / "chat_template.jinja").write_text(CHATML)
    if form == "jinja and folder":
        (path / "additional_chat_templates").mkdir()
        (path / "additional_chat_templates" / "inst.jinja").write_text(INST)
    loaded = AutoTokenizer.from_pretrained(path).chat_template
    read = chat_templates(path)
    assert read == (loaded if isinstance(loaded, dict) else {"default": loaded})
    assert select_chat_template(path, "m", None)[1] == CHATML


def test_a_template_the_tokenizer_lacks_is_one_line(tmp_path):
    path = chat_llama(tmp_path / "two", chat_template=[{"name": "default", "template": CHATML},
                                                        {"name": "inst", "template": INST}])
    with pytest.raises(PathEvalError, match="no chat template named 'tool_use': its templates are default, inst$"):
        select_chat_template(path, "two", "tool_use")
    assert select_chat_template(path, "two", "inst")[0].name == "inst"


def test_zoo_models_are_refused_before_loading(tmp_path):
    out = tmp_path / "out"
    result = run_cli("run", "--suite", "ci", "--tasks", "niah_single_1", "--lengths", "1024", "--limit", "1",
                     "--model", "zoo:rope", "--apply-chat-template", "--out", str(out))
    assert result.returncode == 2
    assert result.stderr.startswith("error: model rope has no chat template") and result.stderr.count("\n") == 1
    assert "drop --apply-chat-template" in result.stderr and "chat_template.jinja" in result.stderr
    assert not (out / "plan.json").exists()
    result = run_cli("run", "--suite", "ci", "--tasks", "niah_single_1", "--model", "zoo:rope",
                     "--system-instruction", "Be brief.", "--out", str(out))
    assert result.returncode == 2 and "add --apply-chat-template" in result.stderr


def test_zoo_checkpoint_with_a_template_end_to_end(tmp_path):
    """A zoo checkpoint copied with a template: NIAH and PhoneBook through it (held-out perplexity, a
    corpus, as it was), the template's hash in plan.json and the records of the prompted tasks, and
    `report` naming the departure from the paper's base-model rows; the same folder without the
    template is another run's, so its resume cache is never reused."""
    model = chat_zoo_model(tmp_path / "rope", "rope")
    out = tmp_path / "out"
    command = ["run", "--suite", "ci", "--tasks", "niah_single_1,phonebook,heldout", "--lengths", "1024", "--limit",
               "1", "--model", str(model), "--quiet", "--out", str(out)]
    result = run_cli(*command, "--apply-chat-template")
    assert result.returncode == 0, result.stderr
    digest = select_chat_template(model, "rope", None)[0].sha256
    plan = json.loads((out / "plan.json").read_text())
    assert plan["models"][0]["chat_template"] == {"name": "default", "sha256": digest}
    records = json.loads((out / "results.json").read_text())
    assert {r["task"]: r["provenance"]["chat_template_sha256"] for r in records if r["task"] != "heldout"} == \
        {"niah_single_1": digest, "phonebook": digest}
    assert {r["provenance"]["chat_template"] for r in records if r["task"] == "heldout"} == {None}
    lm_eval_results = next((out / "lm_eval" / "rope").glob("results_*.json"))
    assert json.loads(lm_eval_results.read_text())["chat_template_sha"] == digest  # lm-eval's own record of it
    for name in ("niah_single_1_1024_s1234", "phonebook_1024_s1234"):
        sample = json.loads((out / "samples" / "rope" / f"{name}.jsonl").read_text().splitlines()[0])
        assert sample["request"][0][0].startswith("<s><|im_start|>user\n")  # the zoo tokenizer adds no BOS itself
    report = run_cli("report", str(out), "--format", "markdown")
    assert f"niah_single_1 prompted through chat template default sha256 {digest[:12]}" in report.stdout
    assert "heldout prompted" not in report.stdout
    again = run_cli(*command)
    assert again.returncode == 2 and "another run" in again.stderr, again.stderr


def test_report_names_chat_departures_both_ways(checkpoint, tmp_path):
    from path_eval.plan import ChatOptions, resolve_plan
    from path_eval.reports.protocol import departures
    from path_eval.suites import load_suite

    suite = load_suite("ruler")
    digest = select_chat_template(checkpoint, "m", None)[0].sha256
    chat = resolve_plan(suite, [str(checkpoint)], tasks=["niah_single_1"], data_dir=tmp_path, chat=ChatOptions())
    assert f"niah_single_1 prompted through chat template default sha256 {digest[:12]} (the protocol: none, the " \
           "paper's rows are a base model's)" in departures(chat)
    plain = resolve_plan(suite, [str(checkpoint)], tasks=["niah_single_1"], data_dir=tmp_path)
    assert not [d for d in departures(plain) if "chat" in d]
    instruct = suite.model_copy(update={"name": "ruler_instruct", "paper_chat_template": True})
    plain = resolve_plan(instruct, [str(checkpoint)], tasks=["niah_single_1"], data_dir=tmp_path)
    assert "niah_single_1 prompted without a chat template (the protocol: the paper's rows used one)" in departures(plain)
