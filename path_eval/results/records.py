"""TaskResults -> ResultRecords: one record per (task, length, metric), per length bucket of the
suite (LongBench-E) and per position bucket (corpora); then the suite's aggregates. A task scored by
a LongBench rule that rounds cells (`fox` and `thudm` both do) has its dataset cells computed and
rounded here as the originals' eval.py does, from the per-sample scores in document order, before
any average."""
from __future__ import annotations

import hashlib

import numpy as np

from path_eval.evaluators import TaskResult
from path_eval.metrics.aggregation import mean_and_stderr, plain_mean
from path_eval.metrics.longbench import all_samples_cell, length_bucket_cell
from path_eval.metrics.registry import metric_entry
from path_eval.results.schema import Provenance, ResultRecord
from path_eval.samples.logs import in_document_order
from path_eval.suites import SuiteSpec

# The provenance fields a record takes from its TaskResult; the others are the model's and the run's.
# (and those of its `protocol`, which the adapter names: BABILong's options, LongBench's rule)
TASK_RESULT_FIELDS = {"data_fingerprint", "data_files", "num_fewshot", "truncate_middle"}


def task_records(suite: SuiteSpec, model: str, results: list[TaskResult], model_info: dict,
                 chat: dict | None = None) -> list[ResultRecord]:
    """A task run under several seeds gives one record per metric: the mean over seeds, with their spread.
    `chat`: the run's chat template settings, in the provenance of the tasks its template reached."""
    from path_eval.kinds import KINDS

    records = []
    for result in results:
        spec = suite.task(result.task)
        prompted = chat if chat and KINDS[spec.kind].prompts_chat(spec) else {}
        provenance = Provenance(**model_info, **prompted, data_fingerprint=result.data_fingerprint,
                                data_files=[str(f) for f in result.data_files], num_fewshot=result.num_fewshot,
                                truncate_middle=result.truncate_middle, **result.protocol)
        source = record_source(result)
        decimals = cell_decimals(suite, result)
        for metric, per_seed in result.metrics.items():
            values = [value for value, _ in per_seed]
            value, stderr = plain_mean(values, [stderr for _, stderr in per_seed])
            if decimals is not None:
                value = all_samples_cell([float(s[metric]) for s in in_document_order(result.samples)], decimals)
            several = len(result.seeds) > 1
            records.append(ResultRecord(
                suite=suite.name, model=model, task=result.task, length=result.length, metric=metric,
                value=value, stderr=stderr, n=result.n, higher_is_better=metric_entry(metric).higher_is_better,
                provenance=provenance, seeds=len(result.seeds) if several else None,
                seed_std=float(np.std(values, ddof=1)) if several else None, data_source=source))
            records += [ResultRecord(suite=suite.name, model=model, task=result.task, length=result.length,
                                     bucket=[b.first, b.last], metric=metric, value=b.value, stderr=b.stderr,
                                     n=result.n, higher_is_better=metric_entry(metric).higher_is_better,
                                     provenance=provenance) for b in result.position_buckets]
        if suite.length_buckets and suite.length_buckets.applies_to(result.task):
            records += bucket_records(suite, model, result, provenance)
    return records


def record_source(result: TaskResult) -> str | None:
    """The record's data-source label: "regenerated" for rows made here, none for published rows."""
    return "regenerated" if result.protocol.get("data_source") == "regenerated" else None


def cell_decimals(suite: SuiteSpec, result: TaskResult) -> int | None:
    """The decimals the task's LongBench rule rounds its cells to (None: not rounded, or no rule)."""
    rule = suite.longbench_rules.get(result.protocol.get("longbench_rule"))
    return rule.cell_decimals if rule else None


def bucket_records(suite: SuiteSpec, model: str, result: TaskResult, provenance: Provenance) -> list[ResultRecord]:
    """Per metric, the mean of the per-sample scores in each of the suite's length buckets (by the
    doc's field, e.g. LongBench-E's `length` in words), a rounded cell under a rule that rounds; an
    empty bucket gives no record."""
    buckets = suite.length_buckets
    decimals = cell_decimals(suite, result)
    records = []
    for metric in result.metrics:
        scores: dict[str, list[float]] = {label: [] for label in buckets.labels}
        for sample in in_document_order(result.samples):
            scores[buckets.label(sample["doc"][buckets.field])].append(float(sample[metric]))
        for label, values in scores.items():
            if not values:
                continue
            value, stderr = mean_and_stderr(values)
            if decimals is not None:
                value = length_bucket_cell(values, decimals)
            records.append(ResultRecord(
                suite=suite.name, model=model, task=result.task, length=result.length, length_bucket=label,
                metric=metric, value=value, stderr=stderr, n=len(values),
                higher_is_better=metric_entry(metric).higher_is_better, provenance=provenance))
    return records


def aggregate(suite: SuiteSpec, records: list[ResultRecord]) -> list[ResultRecord]:
    """The suite's aggregates (means of their parts, each part alike or by its sample count: the spec's
    `weights`), per model, length, length bucket and data source, where every part is present (an aggregate missing a part is left out, never computed from fewer parts)."""
    out = []
    for spec in suite.aggregates:
        for model, length, length_bucket, source in dict.fromkeys((r.model, r.length, r.length_bucket, r.data_source)
                                                                  for r in records if r.bucket is None):
            parts = []
            for ref in spec.mean_of:
                task, metric = ref.split("/", 1)
                parts += [r for r in records if r.model == model and r.length == length and r.task == task
                          and r.metric == metric and r.bucket is None and r.length_bucket == length_bucket
                          and r.data_source == source]
            if len(parts) != len(spec.mean_of):
                continue
            value, stderr = plain_mean([p.value for p in parts], [p.stderr for p in parts],
                                       [p.n for p in parts] if spec.weights == "samples" else None)
            provenance = parts[0].provenance.model_copy(update={
                "data_fingerprint": hashlib.sha256("".join(p.provenance.data_fingerprint or "" for p in parts)
                                                   .encode()).hexdigest(),
                "data_files": [f for p in parts for f in p.provenance.data_files]})
            out.append(ResultRecord(suite=suite.name, model=model, task=spec.name, length=length,
                                    length_bucket=length_bucket, metric=spec.metric, value=value, stderr=stderr,
                                    n=sum(p.n for p in parts),
                                    higher_is_better=metric_entry(spec.metric).higher_is_better, provenance=provenance,
                                    data_source=source))
    return out
