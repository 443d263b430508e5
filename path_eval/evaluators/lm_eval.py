"""Tasks lm-eval defines (Table 2 as is; LongBench-E and BABILong through their adapters), evaluated by
lm-eval's `simple_evaluate` on our model (which keeps its own resume cache: lm-eval's stores pickles)."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache

from path_eval import run_folder
from path_eval.data import fingerprint
from path_eval.errors import PathEvalError
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, TaskResult, lm_eval_output
from path_eval.plan import PlannedItem
from path_eval.samples.logs import write_samples
from path_eval.tasks import LmEvalTask, build_task


class LmEvalEvaluator:
    """lm-eval's tasks; the kinds that run their own configs over local rows through `simple_evaluate`
    (code, TheoremQA) are this evaluator with another `task`."""

    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        return []  # lm-eval reads the data files as they are

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        return evaluate_tasks(lm, [self.task(lm, item, context.plan) for item in items], context)

    def task(self, lm, item: PlannedItem, plan) -> LmEvalTask:
        """The config `simple_evaluate` gets for one plan item."""
        return build_task(plan.spec(item), plan.data_dir, plan.suite, item.length, plan.seed, plan.limit,
                          chat=plan.chat is not None)


def evaluate_tasks(lm, tasks: list[LmEvalTask], context: EvaluationContext) -> list[TaskResult]:
    """One `simple_evaluate` call over `tasks`, seeded with the run's seed; lm-eval answers on the
    first process only (the others get no results). Every process hands lm-eval every request (the
    adapter shares them out), so the first holds all answers and computes the stderrs and sample logs
    one process would; the others skip both (lm-eval would bootstrap there too, then drop it).
    Under a chat template, one call for the tasks lm-eval renders through it (`apply_chat_template`,
    `system_instruction`, `fewshot_as_multiturn` as lm-eval's own options) and one for those whose
    prompts hold it already or get it from the adapter."""
    chat = context.plan.chat
    if chat is None:
        return _simple_evaluate(lm, tasks, context, {})
    by_lm_eval = [task for task in tasks if task.chat_by_lm_eval]
    others = [task for task in tasks if not task.chat_by_lm_eval]
    options = {"apply_chat_template": chat.template or True, "system_instruction": chat.system_instruction,
               "fewshot_as_multiturn": chat.fewshot_as_multiturn}
    return [*(_simple_evaluate(lm, by_lm_eval, context, options) if by_lm_eval else []),
            *(_simple_evaluate(lm, others, context, {"fewshot_as_multiturn": False}) if others else [])]


def _simple_evaluate(lm, tasks: list[LmEvalTask], context: EvaluationContext, chat_options: dict) -> list[TaskResult]:
    import lm_eval

    from path_eval.tasks.lm_eval_tasks import task_manager_for

    plan = context.plan
    first = lm.process_index == 0
    with environment_gathered_once(first):
        output = lm_eval.simple_evaluate(
            model=lm, tasks=[t.config for t in tasks], limit=plan.limit, log_samples=first,
            task_manager=task_manager_for([t.spec.lm_eval_task for t in tasks]), random_seed=plan.seed,
            numpy_random_seed=plan.seed, torch_random_seed=plan.seed, fewshot_random_seed=plan.seed,
            bootstrap_iters=context.bootstrap_iters if first else 0, **chat_options)
    return [] if output is None else results_from_output(tasks, output, context.samples_dir)


@cache
def lm_eval_environment() -> Future:
    """lm-eval's run-wide environment entries, gathered once per process in a thread by lm-eval's
    own `add_env_info` (torch's collect_env report, the lm-eval and transformers versions, the parent
    folder's git commit). `simple_evaluate` calls it after evaluating, on the first process: torch's
    report waits on a dozen subprocesses (pip list, nvidia-smi, ...), 0.6 s on a 2-core CPU, at
    every call. Started when the evaluation starts, it waits beside the model's requests, and every
    later call in the process (the next evaluator, the next model) reuses it."""
    from lm_eval.loggers.utils import add_env_info

    def gather() -> dict:
        entries: dict = {}
        add_env_info(entries)
        return entries

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="path-eval-lm-eval-env")
    gathering = pool.submit(gather)
    pool.shutdown(wait=False)
    return gathering


@contextmanager
def environment_gathered_once(first_process: bool):
    """`simple_evaluate` inside takes lm-eval's environment entries from `lm_eval_environment`
    instead of gathering them again (the same entries: lm-eval's function made them). Only the
    first process gathers: lm-eval adds them there alone, and torch's report initialises CUDA."""
    import lm_eval.evaluator

    if not first_process:
        yield
        return
    gathering = lm_eval_environment()
    own = lm_eval.evaluator.add_env_info
    lm_eval.evaluator.add_env_info = lambda storage: storage.update(gathering.result())
    try:
        yield
    finally:
        lm_eval.evaluator.add_env_info = own


def results_from_output(tasks: list[LmEvalTask], output: dict, samples_dir) -> list[TaskResult]:
    """Per-sample logs and a TaskResult per (suite task, length) from lm-eval's output (whose own
    entries for the result's tasks it keeps); the lm-eval tasks of one suite task under several
    seeds make one result."""
    groups: dict[tuple[str, int | None], list[LmEvalTask]] = {}
    for task in tasks:
        write_samples(output["samples"][task.name],
                      run_folder.log_file(samples_dir, task.lm_eval_name or task.spec.name))
        groups.setdefault((task.spec.name, task.length), []).append(task)
    results = []
    for (name, length), group in groups.items():
        spec = group[0].spec
        metrics = {}
        for metric in spec.metrics:
            metrics[metric.name] = []
            for task in group:
                found, key = output["results"][task.name], f"{metric.name},{task.filter_name}"
                if key not in found:
                    raise PathEvalError(f"lm-eval reported no {metric.name} under filter {task.filter_name!r} for "
                                        f"{task.name}: check the suite's metric names and lm_eval_filter")
                stderr = found.get(f"{metric.name}_stderr,{task.filter_name}")
                metrics[metric.name].append((float(found[key]),
                                             float(stderr) if isinstance(stderr, (int, float)) else None))
        files = [f for t in group for f in t.files]
        results.append(TaskResult(
            task=name, length=length, metrics=metrics,
            n=sum(int(output["n-samples"][t.name]["effective"]) for t in group),
            data_files=files, data_fingerprint=fingerprint(files),
            seeds=[t.seed for t in group if t.seed is not None], num_fewshot=spec.num_fewshot,
            truncate_middle=group[0].truncate_middle, samples=[s for t in group for s in output["samples"][t.name]],
            protocol=group[0].protocol, lm_eval=lm_eval_output(output, [t.name for t in group])))
    return results
