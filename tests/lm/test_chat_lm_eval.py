"""lm-eval's tasks under a chat template: the prompts our run builds (the `arguments` of the sample
logs) equal those lm-eval's own `hf` model builds with apply_chat_template=True on the same tiny Llama
checkpoint, whose tokenizer config holds a chat template: a few-shot multiple-choice task (ARC-Easy, 2
shots as turns, a system instruction), BABILong's generate_until prompt (its formatted input in the
user turn, as booydar/babilong's chat evaluation), and GSM8K through the adapter."""
import json

import pytest

from path_eval.plan import ChatOptions, resolve_plan
from path_eval.runner import RunOptions, run
from path_eval.suites import SuiteSpec
from path_eval.tasks import build_task
from tests.chat_checkpoints import CHATML, INST, chat_llama
from tests.helpers import fixture_data, write_babilong

SYSTEM = "Answer with one word."
LIMIT = 3


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return chat_llama(tmp_path_factory.mktemp("chat-llama"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    data = fixture_data(tmp_path_factory.mktemp("data"), "arc_easy")
    arc = data / "allenai/ai2_arc/ARC-Easy"
    (arc / "train.jsonl").write_text(arc.joinpath("test.jsonl").read_text())  # the shots' split
    return write_babilong(data, lengths=("0k",), tasks=("qa1",))


def suite() -> SuiteSpec:
    return SuiteSpec.model_validate({"name": "chat_check", "description": "chat templates against lm-eval's hf", "tasks": [
        {"name": "arc_easy", "lm_eval_task": "arc_easy", "num_fewshot": 2, "metrics": ["acc"]},
        {"name": "qa1", "lm_eval_task": "babilong_qa1", "adapter": "babilong", "metrics": ["babilong_accuracy"],
         "data": {"split": "qa1", "hf_config": "{length_k}k"}, "lengths": [0]}]})


def stock_hf(checkpoint, configs, **chat):
    import lm_eval

    return lm_eval.simple_evaluate(model="hf", model_args={"pretrained": str(checkpoint), "dtype": "float32",
                                                           "max_length": 4096},
                                   tasks=configs, limit=LIMIT, device="cpu", bootstrap_iters=0, log_samples=True,
                                   random_seed=1234, numpy_random_seed=1234, torch_random_seed=1234,
                                   fewshot_random_seed=1234, **chat)


def test_run_prompts_equal_lm_eval_hf_with_its_chat_template(checkpoint, data_dir, tmp_path):
    spec = suite()
    chat = ChatOptions(system_instruction=SYSTEM, fewshot_as_multiturn=True)
    plan = resolve_plan(spec, [str(checkpoint)], limit=LIMIT, data_dir=data_dir, chat=chat)
    run(plan, RunOptions(out=tmp_path, bootstrap_iters=0))
    configs = [build_task(spec.task("arc_easy"), data_dir, spec, chat=True),
               build_task(spec.task("qa1"), data_dir, spec, 0, chat=True)]
    stock = stock_hf(checkpoint, [c.config for c in configs], apply_chat_template=True, system_instruction=SYSTEM,
                     fewshot_as_multiturn=True)
    for task in configs:
        log = tmp_path / "samples" / checkpoint.name / f"{task.lm_eval_name or task.spec.name}.jsonl"
        ours = {s["doc_id"]: s["request"] for s in map(json.loads, log.read_text().splitlines())}
        theirs = {s["doc_id"]: [list(a) for a in s["arguments"]] for s in stock["samples"][task.name]}
        assert ours == theirs and len(ours) == (LIMIT if task.spec.name == "arc_easy" else 2)  # BABILong: 2 rows
        first = theirs[0][0][0]
        assert first.startswith(f"<s><|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n")
        assert first.endswith("<|im_start|>assistant\n") or task.spec.name == "arc_easy"
    # the shots as turns: two answered user turns before the question
    assert ours_first_arc(tmp_path, checkpoint).count("<|im_start|>assistant\n") == 3
    # BABILong: the original's formatted input whole in the one user turn
    babilong = configs[1].config["doc_to_text"]
    row = json.loads((data_dir / "RMT-team/babilong-1k-samples/0k/qa1.jsonl").read_text().splitlines()[0])
    qa1 = json.loads((tmp_path / "samples" / checkpoint.name / "qa1_0.jsonl").read_text().splitlines()[0])
    assert qa1["request"][0][0] == (f"<s><|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{babilong(row)}"
                                    "<|im_end|>\n<|im_start|>assistant\n")


def ours_first_arc(out, checkpoint) -> str:
    return json.loads((out / "samples" / checkpoint.name / "arc_easy.jsonl").read_text().splitlines()[0])["request"][0][0]


def test_adapter_renders_gsm8k_as_lm_eval_hf_including_the_system_role_fallback(tmp_path):
    """GSM8K (generate_until, its 5 shots as turns) through `PathEvalLM.apply_chat_template`, with a
    template that refuses a system turn: lm-eval's hf model drops it and so does the adapter."""
    import lm_eval

    from path_eval.lm import PathEvalLM
    from path_eval.tasks.lm_eval_tasks import lm_eval_config

    checkpoint = chat_llama(tmp_path / "inst", chat_template=INST)
    data = tmp_path / "data" / "openai" / "gsm8k" / "main"
    data.mkdir(parents=True)
    rows = [{"question": f"Tom has {n} apples and buys {n + 2} more. How many apples has he?",
             "answer": f"He has {n} + {n + 2} = {2 * n + 2} apples.\n#### {2 * n + 2}"} for n in range(8)]
    for split in ("train", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = lm_eval_config("gsm8k") | {"dataset_path": "json", "dataset_name": None,
                                        "dataset_kwargs": {"data_files": {"train": str(data / "train.jsonl"),
                                                                          "test": str(data / "test.jsonl")}},
                                        "generation_kwargs": {"until": ["Question:"], "max_gen_toks": 4,
                                                              "do_sample": False, "temperature": 0.0}}
    chat = {"apply_chat_template": True, "system_instruction": SYSTEM, "fewshot_as_multiturn": True}
    ours = lm_eval.simple_evaluate(model=PathEvalLM(str(checkpoint)), tasks=[config], limit=LIMIT, bootstrap_iters=0,
                                   log_samples=True, random_seed=1234, numpy_random_seed=1234, torch_random_seed=1234,
                                   fewshot_random_seed=1234, **chat)
    theirs = stock_hf(checkpoint, [config], **chat)
    prompts = [[list(a) for a in s["arguments"]] for s in ours["samples"]["gsm8k"]]
    assert prompts == [[list(a) for a in s["arguments"]] for s in theirs["samples"]["gsm8k"]]
    assert prompts[0][0][0].startswith("<s>[INST] Question: Tom") and SYSTEM not in prompts[0][0][0]
    assert prompts[0][0][0].count("[INST]") == 6  # 5 shots and the question


def test_named_template_is_the_one_applied(tmp_path):
    """`--apply-chat-template NAME` renders with the tokenizer's template NAME (TemplateLM's
    resolution), not its default."""
    from path_eval.lm import PathEvalLM

    checkpoint = chat_llama(tmp_path / "two", chat_template=[{"name": "default", "template": CHATML},
                                                              {"name": "inst", "template": INST}])
    chat = [{"role": "user", "content": "Hi"}]
    assert PathEvalLM(str(checkpoint)).apply_chat_template(chat) == "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert PathEvalLM(str(checkpoint), chat_template_name="inst").apply_chat_template(chat) == "<s>[INST] Hi [/INST]"


def test_longbench_run_cuts_then_wraps_where_pred_py_wraps(checkpoint, tmp_path, monkeypatch):
    """A LongBench-E run under a template: qasper's prompt cut to truncate_middle, then put in the user
    turn by the adapter (lm-eval passes it on unwrapped); trec, which pred.py leaves unwrapped, is cut
    only. The tokens the model reads are recorded as the adapter makes them."""
    from path_eval.lm import PathEvalLM
    from path_eval.suites import load_suite
    from tests.helpers import write_longbench_e

    data = write_longbench_e(tmp_path / "data", datasets=("qasper", "trec"))
    suite = load_suite("longbench_e").model_copy(update={"truncate_middle": 48, "max_length": 1024})
    seen = {}
    own = PathEvalLM.prompt_tokens

    def recorded(self, keys):
        encoded = own(self, keys)
        for (text, keep, user_turn), tokens in zip(keys, encoded):
            seen[text] = (keep, user_turn, self.tok_decode(tokens, skip_special_tokens=False))
        return encoded

    monkeypatch.setattr(PathEvalLM, "prompt_tokens", recorded)
    plan = resolve_plan(suite, [str(checkpoint)], tasks=["qasper", "trec"], limit=1, data_dir=data,
                        chat=ChatOptions(system_instruction=SYSTEM))
    records = run(plan, RunOptions(out=tmp_path / "out", bootstrap_iters=0))
    assert {r.task for r in records} >= {"qasper", "trec"}
    for task, wrapped in (("qasper", True), ("trec", False)):
        sample = json.loads((tmp_path / "out" / "samples" / checkpoint.name / f"{task}.jsonl").read_text()
                            .splitlines()[0])
        context, options = sample["request"][0]
        assert "<|im_start|>" not in context  # lm-eval handed the raw prompt on
        assert options.get("chat_user_turn", False) is wrapped
        keep, user_turn, read = seen[context]
        assert (keep, user_turn) == (48, wrapped)
        if wrapped:
            assert read.startswith(f"<s><|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n")
            assert read.endswith("<|im_end|>\n<|im_start|>assistant\n")
        else:
            assert "<|im_start|>" not in read
        prompt = [r for r in records if r.task == task][0].provenance
        assert prompt.chat_template_sha256 == (plan.models[0].chat_template.sha256 if wrapped else None)
