"""Execute a plan: one model at a time, all of its tasks in one lm-eval call."""
from __future__ import annotations

import datetime
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from path_eval.data import fingerprint
from path_eval.errors import PathEvalError
from path_eval.lm.distributed import finish_processes, launched_processes
from path_eval.metrics import mean_and_stderr, perplexity_and_stderr, plain_mean
from path_eval.metrics.registry import metric_entry
from path_eval.plan import Plan
from path_eval.results import Provenance, ResultRecord, write_results
from path_eval.results.provenance import git_revision, tokenizer_sha256, versions, weights_sha256
from path_eval.samples import slug, write_samples
from path_eval.runner.corpus import score_corpus
from path_eval.tasks import build_task
from path_eval.tasks.extrapolation import documents
from path_eval.tasks.generated import build_generated_task, input_files, sample_seeds

log = logging.getLogger("path_eval")


@dataclass
class RunOptions:
    out: Path
    device: str = "cpu"
    dtype: str | None = None
    attention: str | None = None
    batch_size: int = 1
    max_length: int | None = None
    bootstrap_iters: int = 100000


def resume_cache(out: Path, name: str, identity: dict) -> Path:
    """Where finished requests of this model are kept (lm-eval's request cache, one sqlite row per
    request, committed as each is computed): a run started again with the same arguments reuses
    them. The name carries everything that changes the numbers, so a changed model, dtype, device,
    backend or length never reuses another's answers."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return out / "resume" / f"{slug(name)}-{key}"


def model_names(paths: list[Path]) -> list[str]:
    """Folder names, or whole paths where folder names collide."""
    names = [p.name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths)]


def run(plan: Plan, options: RunOptions) -> list[ResultRecord]:
    import lm_eval

    from path_eval.lm import PathEvalLM
    from path_eval.models.loading import weight_files
    from path_eval.tasks.lm_eval_tasks import task_manager

    if plan.data_dir is None:
        raise PathEvalError("no data dir: give --data-dir DIR (filled by `python eval.py download`)")
    fixed_tasks = [build_task(item.task, plan.data_dir, plan.suite, item.length) for item in plan.items
                   if item.task.lm_eval_task]
    corpus_items = [item for item in plan.items if item.task.corpus]
    for item in corpus_items:  # missing corpus data fails before any model loads
        documents(item.task.corpus, plan.data_dir, plan.suite.name)
    generated_items = runnable_generated_items(plan)
    if corpus_items and launched_processes() > 1:
        raise PathEvalError("per-position perplexity (corpus tasks) is not shared between processes yet: run the "
                            "extrapolation suite without accelerate launch (one process per model instead)")
    # A generated sample fills its length without BOS (as the originals count); the model also reads BOS.
    max_length = options.max_length or plan.suite.max_length or max(
        [i.length for i in corpus_items] + [i.length + 1 for i in generated_items], default=None)
    check_room_for_generation(fixed_tasks, max_length)
    records: list[ResultRecord] = []
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    env = versions() | {"git_revision": git_revision()}
    lm_rank = 0
    for path, name in zip(plan.models, model_names(plan.models)):
        clock = time.perf_counter()
        lm = PathEvalLM(str(path), device=options.device, dtype=options.dtype, attention=options.attention,
                        batch_size=options.batch_size, max_length=max_length)
        if max_length is None:  # the checkpoint's own context, known only now
            check_room_for_generation(fixed_tasks, lm.max_length)
        backend = getattr(lm.model, "backend_name", None)
        identity = {
            "model_path": str(path.resolve()),
            "model_type": json.loads((path / "config.json").read_text()).get("model_type", "?"),
            "variant": getattr(lm.model.config, "attention", None),
            "config_sha256": hashlib.sha256((path / "config.json").read_bytes()).hexdigest(),
            "weights_sha256": weights_sha256(weight_files(path)),
            "tokenizer": lm.tokenizer.name_or_path, "tokenizer_sha256": tokenizer_sha256(lm.tokenizer),
            "max_length": lm.max_length, "dtype": str(next(lm.model.parameters()).dtype).removeprefix("torch."),
            "device": options.device, "attention_backend": backend,
        }
        log.info("%s: %s (%s) on %s, %s, attention backend %s, tokenizer %s, max_length %d, data %s", name,
                 identity["model_type"], identity["variant"] or "transformers", options.device, identity["dtype"],
                 backend or "transformers' own", identity["tokenizer"], lm.max_length, plan.data_dir)
        if lm.rank != 0:  # the first process freezes any new samples; the others then read them
            lm.barrier()
        tasks = {t.name: t for t in fixed_tasks + generated_tasks(plan, generated_items, lm.tokenizer,
                                                                   identity["tokenizer_sha256"])}
        if lm.rank == 0:
            lm.barrier()
        output = lm_eval.simple_evaluate(
            model=lm, tasks=[t.config for t in tasks.values()], limit=plan.limit, log_samples=True,
            task_manager=task_manager(), random_seed=plan.seed, numpy_random_seed=plan.seed,
            torch_random_seed=plan.seed, fewshot_random_seed=plan.seed, bootstrap_iters=options.bootstrap_iters,
            use_cache=str(resume_cache(options.out, name, identity))) if tasks else None
        scored = {(item.task.name, item.length): score_corpus(lm, item.task, item.length, plan.suite, plan.data_dir,
                                                              options.out / "samples" / slug(name), plan.limit)
                  for item in corpus_items}
        wall = time.perf_counter() - clock
        counters = lm.gather_object({"tokens": lm.tokens_processed, "seconds": lm.seconds,
                                     "truncated": lm.truncated_requests, "requests": lm.requests_computed})
        lm_rank = lm.rank
        if lm_rank != 0:  # results are written by the first process alone
            del lm
            continue
        model_info = identity | {
            "seed": plan.seed, "limit": plan.limit, "batch_size": options.batch_size,
            "started_at": started, "wall_time_s": round(wall, 3), "tokens": sum(c["tokens"] for c in counters),
            # processes run side by side: the run's rate is the sum of theirs
            "tokens_per_second": round(sum(c["tokens"] / c["seconds"] for c in counters if c["seconds"]), 1) or None,
            "truncated_requests": sum(c["truncated"] for c in counters),
            "requests_computed": sum(c["requests"] for c in counters), "processes": len(counters),
        } | env
        if output is not None:
            records += lm_eval_records(plan, name, tasks, output, model_info, options.out / "samples" / slug(name))
        for (task_name, length), result in scored.items():
            records += corpus_records(plan, name, task_name, length, result, model_info)
            curve = options.out / "curves" / slug(name) / f"{task_name}@{length}.npy"
            curve.parent.mkdir(parents=True, exist_ok=True)
            np.save(curve, result["curve"].astype(np.float32))
        del lm
    finish_processes()
    if launched_processes() > 1 and lm_rank != 0:
        return []
    records += aggregate(plan, records)
    write_results(records, options.out / "results.json")
    return records


def check_room_for_generation(tasks: list, max_length: int | None) -> None:
    """A middle-truncated prompt plus the task's new tokens must fit the context, or the model
    adapter would cut its left end too."""
    for task in tasks:
        new_tokens = task.config["generation_kwargs"]["max_gen_toks"] if task.truncate_middle else 0
        if task.truncate_middle and max_length and task.truncate_middle + new_tokens > max_length:
            raise PathEvalError(f"task {task.spec.name}: truncate_middle {task.truncate_middle} + {new_tokens} new "
                                f"tokens exceed max_length {max_length}: raise --max-length or lower the suite's "
                                "truncate_middle (in a copy of the suite)")


def runnable_generated_items(plan: Plan) -> list:
    """The plan's generated-task items whose input data is present. Missing data is an error, except
    for an `optional` task, which is dropped with a notice (RULER without its QA sets)."""
    items, skipped = [], {}
    for item in plan.items:
        if not item.task.generator:
            continue
        try:
            input_files(item.task, plan.data_dir, plan.suite.name)
        except PathEvalError as err:
            if not item.task.optional:
                raise
            skipped[item.task.name] = str(err)
            continue
        items.append(item)
    for name, reason in skipped.items():
        note = f"{name} skipped (optional, its data is missing): {reason}"
        log.warning(note)
        plan.notes.append(note)
    return items


def generated_tasks(plan: Plan, items: list, tokenizer, tokenizer_hash: str) -> list:
    """Frozen samples (made once per tokenizer, length, seed and generator version) as lm-eval tasks."""
    out = []
    for item in items:
        count = min(plan.limit, item.task.samples or plan.suite.samples) if plan.limit else (
            item.task.samples or plan.suite.samples)
        for seed in sample_seeds(item.task, plan.seed):
            out.append(build_generated_task(item.task, item.length, seed, tokenizer, tokenizer_hash, count,
                                            plan.data_dir, plan.suite.name))
    return out


def lm_eval_records(plan: Plan, model: str, tasks: dict, output: dict, model_info: dict,
                    samples_dir: Path) -> list[ResultRecord]:
    """Per-sample logs and one record per suite metric (and length) from lm-eval's output; a task
    run under several seeds gives one record: the mean over seeds, with their spread."""
    groups: dict[tuple[str, int | None], list] = {}
    for task in tasks.values():
        write_samples(output["samples"][task.name], samples_dir / f"{task.lm_eval_name or task.spec.name}.jsonl")
        groups.setdefault((task.spec.name, task.length), []).append(task)
    records = []
    for (_, length), group in groups.items():
        spec = group[0].spec
        files = [f for t in group for f in t.files]
        provenance = Provenance(**model_info, data_fingerprint=fingerprint(files),
                                data_files=[str(f) for f in files], num_fewshot=spec.num_fewshot,
                                truncate_middle=group[0].truncate_middle)
        for metric in spec.metrics:
            values, stderrs = [], []
            for task in group:
                found = output["results"][task.name]
                if f"{metric.name},none" not in found:
                    raise PathEvalError(f"lm-eval reported no {metric.name} for {task.name}: check the suite's "
                                        "metric names")
                values.append(float(found[f"{metric.name},none"]))
                stderr = found.get(f"{metric.name}_stderr,none")
                stderrs.append(float(stderr) if isinstance(stderr, (int, float)) else None)
            value, stderr = plain_mean(values, stderrs)
            records.append(ResultRecord(
                suite=plan.suite.name, model=model, task=spec.name, length=length, metric=metric.name,
                value=value, stderr=stderr, n=sum(int(output["n-samples"][t.name]["effective"]) for t in group),
                higher_is_better=metric_entry(metric.name).higher_is_better, provenance=provenance,
                seeds=len(group) if len(group) > 1 else None,
                seed_std=float(np.std(values, ddof=1)) if len(group) > 1 else None))
        if plan.suite.length_buckets:
            samples = [s for t in group for s in output["samples"][t.name]]
            records += bucket_records(plan, model, spec, length, samples, provenance)
    return records


def bucket_records(plan: Plan, model: str, spec, length: int | None, samples: list[dict],
                   provenance: Provenance) -> list[ResultRecord]:
    """Per metric, the mean of the per-sample scores in each of the suite's length buckets (by the
    doc's field, e.g. LongBench-E's `length` in words); an empty bucket gives no record."""
    buckets = plan.suite.length_buckets
    records = []
    for metric in spec.metrics:
        scores: dict[str, list[float]] = {label: [] for label in buckets.labels}
        for sample in samples:
            scores[buckets.label(sample["doc"][buckets.field])].append(float(sample[metric.name]))
        for label, values in scores.items():
            if not values:
                continue
            value, stderr = mean_and_stderr(values)
            records.append(ResultRecord(
                suite=plan.suite.name, model=model, task=spec.name, length=length, length_bucket=label,
                metric=metric.name, value=value, stderr=stderr, n=len(values),
                higher_is_better=metric_entry(metric.name).higher_is_better, provenance=provenance))
    return records


def corpus_records(plan: Plan, model: str, task: str, length: int, result: dict, model_info: dict) -> list[ResultRecord]:
    provenance = Provenance(**model_info, data_fingerprint=result["fingerprint"],
                            data_files=[str(f) for f in result["files"][:50]], num_fewshot=0)
    out = []
    overall = [(None, result["total"])]
    for bucket, (_, _, nll_sum, count, means) in overall + [([b[0], b[1]], b) for b in result["buckets"]]:
        ppl, stderr = perplexity_and_stderr(nll_sum, count, means)
        out.append(ResultRecord(suite=plan.suite.name, model=model, task=task, length=length, bucket=bucket,
                                metric="perplexity", value=ppl, stderr=stderr, n=result["blocks"],
                                higher_is_better=metric_entry("perplexity").higher_is_better,
                                provenance=provenance))
    return out


def aggregate(plan: Plan, records: list[ResultRecord]) -> list[ResultRecord]:
    """The suite's aggregates (plain means), per model, length and length bucket, where every part
    is present (an aggregate missing a part is left out, never computed from fewer parts)."""
    out = []
    for spec in plan.suite.aggregates:
        for model, length, length_bucket in dict.fromkeys((r.model, r.length, r.length_bucket)
                                                          for r in records if r.bucket is None):
            parts = []
            for ref in spec.mean_of:
                task, metric = ref.split("/", 1)
                parts += [r for r in records if r.model == model and r.length == length and r.task == task
                          and r.metric == metric and r.bucket is None and r.length_bucket == length_bucket]
            if len(parts) != len(spec.mean_of):
                continue
            value, stderr = plain_mean([p.value for p in parts], [p.stderr for p in parts])
            provenance = parts[0].provenance.model_copy(update={
                "data_fingerprint": hashlib.sha256("".join(p.provenance.data_fingerprint or "" for p in parts)
                                                   .encode()).hexdigest(),
                "data_files": [f for p in parts for f in p.provenance.data_files]})
            out.append(ResultRecord(suite=plan.suite.name, model=model, task=spec.name, length=length,
                                    length_bucket=length_bucket, metric=spec.metric, value=value, stderr=stderr,
                                    n=sum(p.n for p in parts),
                                    higher_is_better=metric_entry(spec.metric).higher_is_better, provenance=provenance))
    return out
