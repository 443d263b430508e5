"""Rescoring a finished run from its per-sample logs, without loading a model: each task whose
per-sample scores we compute from a generation (LongBench-E through its adapter, RULER and PhoneBook)
is scored again from the logged generations under the run's stored suite, optionally with another
LongBench rule; a kind that scores its own logs (token tagging: A5, MQRAR-N; code: the programs'
logged verdicts, nothing runs again) from their rows; the other records (lm-eval's own metrics, perplexities) are kept as they are; the
suite's aggregates are recomputed. Values and standard errors are computed as lm-eval computes them
for a mean, so the run's own rule reproduces its records exactly (in a one-process run; lm-eval sums
the scores of a data-parallel run in another order, which can move the last digit)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.evaluators import TaskResult
from path_eval.kinds import KINDS
from path_eval.plan import PlannedItem, ResolvedPlan
from path_eval.plan.stored import stored_plan
from path_eval.results.records import TASK_RESULT_FIELDS, aggregate, task_records
from path_eval.results.sample_logs import log_names, read_sample_log, sample_log_file
from path_eval.results.schema import ResultRecord
from path_eval.results.store import load_records
from path_eval.suites import SuiteSpec, TaskSpec
from path_eval.tasks.lm_eval_tasks import adapter_protocol


def rescored_plan(run: Path) -> ResolvedPlan:
    """The plan of the run to score again, or one error line."""
    plan = stored_plan(run)
    if plan is None:
        raise PathEvalError(f"{run} holds no plan.json: give the folder of a run `python eval.py run` wrote "
                            "(rescore reads its plan and its samples/ logs)")
    return plan


def sample_scorer(spec: TaskSpec, suite: SuiteSpec):
    """doc, [generation] -> {metric: score} for a task we score per sample from its generation, as
    its kind's row says (path_eval/kinds/); None for the others (lm-eval scores them, or they
    generate nothing)."""
    scorer = KINDS[spec.kind].sample_scorer
    return scorer(spec, suite) if scorer else None


def lm_eval_mean(values: list[float], with_stderr: bool) -> tuple[float, float | None]:
    """lm-eval's `mean` aggregation and its closed-form stderr (none for one sample, or where the run
    computed none)."""
    from lm_eval.api.metrics import mean, mean_stderr

    return mean(values), mean_stderr(values) if with_stderr and len(values) > 1 else None


def scored_sample(row: dict, scorer, file: Path) -> dict:
    """A logged sample scored again, or one error line naming its log: rescore needs its doc (an
    object holding the reference fields the scorers read) and its response, a list of generated texts."""
    doc, response = row.get("doc"), row.get("response")
    if not isinstance(doc, dict):
        problem = f"doc {shown_value(doc)}, not an object"
    elif not (isinstance(response, list) and response and all(isinstance(text, str) for text in response)):
        problem = f"response {shown_value(response)}, not a list of generated texts"
    else:
        try:
            return {"doc": doc, **scorer(doc, response)}
        except KeyError as missing:
            problem = f"a doc without the field {missing} its score reads"
    raise PathEvalError(f"per-sample log {file}: sample {row.get('doc_id', '?')} has {problem}: give the samples/ "
                        "folder the run wrote, or run it again")


def shown_value(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def rescored_result(run: Path, model: str, item: PlannedItem, suite: SuiteSpec, scorer,
                    old: list[ResultRecord]) -> TaskResult:
    spec = suite.task(item.task)
    kept_stderr = any(r.stderr is not None for r in old if r.length_bucket is None)
    metrics: dict[str, list[tuple[float, float | None]]] = {m.name: [] for m in spec.metrics}
    samples = []
    for name in log_names(item):
        rows = complete_log(run, model, name, item)
        scored = [scored_sample(row, scorer, sample_log_file(run, model, name)) for row in rows]
        for name in metrics:
            metrics[name].append(lm_eval_mean([s[name] for s in scored], kept_stderr))
        samples += scored
    refuse_unrecorded_count(model, item, len(samples), old)
    provenance = old[0].provenance
    return TaskResult(task=item.task, length=item.length, metrics=metrics, n=len(samples),
                      data_files=[Path(f) for f in provenance.data_files],
                      data_fingerprint=provenance.data_fingerprint, seeds=list(item.seeds),
                      num_fewshot=provenance.num_fewshot, truncate_middle=provenance.truncate_middle,
                      samples=samples, protocol=adapter_protocol(spec, suite, item.length) if spec.adapter else {})


def complete_log(run: Path, model: str, name: str, item: PlannedItem) -> list[dict]:
    """The rows of one of an item's logs, or one line unless each sample is there exactly once:
    distinct whole-number doc_ids (per seed, where rows name theirs), and for a sampled kind exactly
    0 .. samples - 1 of the plan (what the run itself made) for each seed of the plan the log holds.
    With the records' n (`refuse_unrecorded_count`), a duplicated, deleted or added line is refused
    rather than scored."""
    rows = read_sample_log(run, model, name)
    ids = Counter((row.get("seed"), row.get("doc_id")) for row in rows)
    odd = next((i for _, i in ids if isinstance(i, bool) or not isinstance(i, int)), False)
    seeds = {seed for seed, _ in ids}
    if odd is not False:
        problem = f"a sample whose doc_id is {shown_value(odd)}, not a whole number"
    elif len(ids) != len(rows):
        seed, doc_id = next(i for i, count in ids.items() if count > 1)
        problem = f"sample {doc_id}{'' if seed is None else f' of seed {seed}'} twice"
    elif seeds - {None} - set(item.seeds):
        problem = f"samples of seed {sorted(seeds - {None} - set(item.seeds), key=str)[0]}, which the plan has not"
    elif item.samples is not None and set(ids) != {(seed, i) for seed in seeds for i in range(item.samples)}:
        missing = sorted(i for seed in seeds for i in range(item.samples) if (seed, i) not in ids)
        problem = (f"{len(rows)} samples where the plan made {item.samples * len(seeds)}" +
                   (f" (sample {missing[0]} is missing)" if missing else ""))
    else:
        return rows
    raise PathEvalError(f"per-sample log {sample_log_file(run, model, name)} holds {problem}: give the samples/ "
                        "folder the run wrote, or run it again")


def refuse_unrecorded_count(model: str, item: PlannedItem, count: int, old: list[ResultRecord]) -> None:
    """One line where an item's logs hold another number of samples than its record's n."""
    recorded = next((r.n for r in old if r.bucket is None and r.length_bucket is None), None)
    if recorded is not None and recorded != count:
        raise PathEvalError(f"the per-sample logs of {model} {item.task}@{item.length} hold {count} samples where "
                            f"the run recorded {recorded} in results.json: a sample was added or deleted; give the "
                            "samples/ folder the run wrote, or run it again")


def own_log_result(run: Path, model: str, item: PlannedItem, suite: SuiteSpec, old: list[ResultRecord]) -> TaskResult:
    """An item of a kind that scores its own logs (`Kind.log_scorer`: token tagging), scored again."""
    spec = suite.task(item.task)
    rows = [row for name in log_names(item) for row in complete_log(run, model, name, item)]
    refuse_unrecorded_count(model, item, len(rows), old)
    try:
        metrics = KINDS[item.kind].log_scorer(spec, rows, list(item.seeds))
    except (KeyError, ValueError, ZeroDivisionError) as err:
        raise PathEvalError(f"the per-sample logs of {model}'s {item.task} at {item.length} cannot be scored again "
                            f"({err}): give the samples/ folder the run wrote, or run it again") from None
    provenance = old[0].provenance
    return TaskResult(task=item.task, length=item.length, metrics=metrics, n=len(rows),
                      data_files=[Path(f) for f in provenance.data_files],
                      data_fingerprint=provenance.data_fingerprint, seeds=list(item.seeds))


def rescore(run: Path, longbench_rule: str | None = None) -> tuple[list[ResultRecord], SuiteSpec]:
    """The run's records scored again from its logs (with `longbench_rule`, else the run's own), and
    the suite they were scored under."""
    run = Path(run)
    if not run.is_dir():
        raise PathEvalError(f"no run folder {run}: give the --out folder of a finished `python eval.py run`")
    records = load_records(run)
    plan = rescored_plan(run)
    suite = plan.suite.with_longbench_rule(longbench_rule)
    aggregates = {a.name for a in suite.aggregates}
    groups: dict[tuple[str, str, int | None], list[ResultRecord]] = {}
    for record in records:
        if record.task not in aggregates:
            groups.setdefault((record.model, record.task, record.length), []).append(record)
    items = {(model, item.task, item.length): item for item in plan.items for model in item.models}
    out, rescored = [], 0
    for (model, task, length), old in groups.items():
        item = items.get((model, task, length))
        scorer = sample_scorer(suite.task(task), suite) if item is not None else None
        if item is not None and KINDS[item.kind].log_scorer is not None:
            result = own_log_result(run, model, item, suite, old)
        elif scorer is None:
            out += old
            continue
        else:
            result = rescored_result(run, model, item, suite, scorer, old)
        info = old[0].provenance.model_dump(exclude=TASK_RESULT_FIELDS | result.protocol.keys())
        out += task_records(suite, model, [result], info)
        rescored += 1
    if not rescored:
        raise PathEvalError(f"the run in {run} holds no task scored from its generations (LongBench-E, RULER, "
                            "PhoneBook) or from its own logs (A5, MQRAR-N, code): there is nothing to rescore")
    return out + aggregate(suite, out), suite
