"""Execute a resolved plan: one model at a time, each evaluator on its items, lm-eval's own layout
written as each model is done (OUT/lm_eval/<model>/), records once every model is done."""
from __future__ import annotations

import datetime
import hashlib
import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from path_eval import run_folder
from path_eval.atomic_files import write_json_atomic
from path_eval.evaluators import EvaluationContext
from path_eval.evaluators.registry import evaluator_of
from path_eval.kinds import KINDS
from path_eval.lm import request_cache
from path_eval.models.identity import model_identity, tokenizer_sha256
from path_eval.errors import PathEvalError
from path_eval.models.chat_template import ChatLayout, select_chat_template, template_sha256
from path_eval.plan import PlannedModel, ResolvedPlan
from path_eval.results import ResultRecord, write_results
from path_eval.results.lm_eval_layout import write_lm_eval_layout
from path_eval.results.provenance import environment, run_provenance
from path_eval.results.records import aggregate, task_records
from path_eval.runner import processes
from path_eval.terminal import say

log = logging.getLogger("path_eval")


@dataclass
class RunOptions:
    out: Path
    device: str = "cpu"
    dtype: str | None = None
    attention: str | None = None
    batch_size: int = 1
    bootstrap_iters: int = 100000
    wandb_args: dict | None = None  # lm-eval's WandbLogger, one W&B run per model (path_eval.results.lm_eval_layout)
    hf_hub_log_args: dict | None = None  # lm-eval's EvaluationTracker


def resume_cache(out: Path, name: str, identity: dict, rank: int) -> Path:
    """Where finished requests of this model are kept (`path_eval.lm.request_cache`: one JSON row per
    request, committed as each is computed; one file per data-parallel process): a run started again
    with the same arguments reuses them. The name carries everything that changes the numbers, so a
    changed model, dtype, device, backend or length never reuses another's answers."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return run_folder.resume_cache_file(out, name, key, rank)


def saved_requests(out: Path) -> int:
    """Work a killed run keeps for the same command: finished requests, argmax batches (flip-flop,
    token tagging) and corpus blocks."""
    return request_cache.saved_requests(run_folder.resume_folder(out)) + len(run_folder.saved_blocks(out))


def say_resuming(out: Path, model: str, saved: int) -> None:
    """Before a model's work, how much of it an earlier start of the same command finished: its resume
    cache's rows (requests and argmax batches, of every process) and its corpus blocks. On stderr,
    also under --quiet, as the count of what was reused at the end."""
    blocks = len(run_folder.saved_blocks(out, model))
    if saved or blocks:
        say(f"resuming {model}: {saved} finished requests and batches, {blocks} corpus blocks saved in {out}; "
            "they are reused, not computed again", file=sys.stderr)


def chat_layout(plan: ResolvedPlan, model: PlannedModel, tokenizer) -> ChatLayout | None:
    """The chat layout of the model's prompts under the run's chat options (None without), from the
    template the plan chose, read again from the checkpoint: a file changed since is one line."""
    if plan.chat is None:
        return None
    template, text = select_chat_template(model.path, model.name, plan.chat.template)
    if template != model.chat_template:
        raise PathEvalError(f"model {model.name}: its chat template {template.name} changed since the run's plan was "
                            "made: start the run in a new --out folder")
    return ChatLayout(tokenizer, text, plan.chat.system_instruction)


def chat_settings(plan: ResolvedPlan, model: PlannedModel) -> dict:
    """The chat settings that change a model's numbers: in the resume cache's key (with its identity)
    and the provenance of the records of tasks the template reached; none for a run without a
    template, whose cache key stays as it was."""
    if plan.chat is None:
        return {}
    return {"chat_template": model.chat_template.name, "chat_template_sha256": model.chat_template.sha256,
            "system_instruction": plan.chat.system_instruction, "fewshot_as_multiturn": plan.chat.fewshot_as_multiturn}


def write_plan(plan: ResolvedPlan, out: Path) -> None:
    """OUT/plan.json (the plan) and OUT/suite.json (the suite it resolved, which reports read)."""
    write_json_atomic(json.loads(plan.model_dump_json()), run_folder.plan_file(out))
    write_json_atomic(json.loads(plan.suite.model_dump_json()), run_folder.suite_file(out))


def run(plan: ResolvedPlan, options: RunOptions) -> list[ResultRecord]:
    """The records of every model on every item (on a data-parallel process other than the first: none)."""
    from path_eval.lm import PathEvalLM
    from path_eval.models.tokenizer import load_tokenizer

    times = processes.PhaseTimes()
    times.started()
    if run_folder.writing_process():
        write_plan(plan, options.out)
    parallel = processes.start(options.device)
    device = processes.model_device(parallel, options.device)
    records: list[ResultRecord] = []
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    env = environment()
    writes = processes.writes_results(parallel)
    caches = []
    reused = answered = 0  # requests of every process, over every model
    for model in plan.evaluated_models():
        evaluators = [(evaluator_of(KINDS[kind]), plan.of_kind(kind, model.name)) for kind in KINDS
                      if plan.of_kind(kind, model.name)]  # records list the kinds in KINDS' order
        began = time.perf_counter()
        with times.phase("tokenizer"):
            tokenizer = load_tokenizer(model.path)
            tokenizer_hash = tokenizer_sha256(tokenizer)
        chat = chat_layout(plan, model, tokenizer)
        context = EvaluationContext(plan, model, options.out, tokenizer_hash, options.bootstrap_iters, chat)
        loading = processes.load_in_background(model.path, times, device=device, dtype=options.dtype,
                                               attention=options.attention)
        with processes.load_settled_on_error(loading):
            with times.phase("samples"):
                processes.freeze_shares([s for evaluator, items in evaluators
                                         for s in evaluator.frozen_sets(tokenizer, items, context)], parallel)
            with times.phase("load_wait"):
                weights = loading.result()
        lm = PathEvalLM(str(model.path), model=weights, tokenizer=tokenizer, device=device, dtype=options.dtype,
                        attention=options.attention, batch_size=options.batch_size, max_length=model.max_length,
                        parallel=parallel, chat_template_name=plan.chat.template if chat else None,
                        system_instruction=plan.chat.system_instruction if chat else None)
        lm.started = began  # the provenance's wall time counts loading the model and freezing its samples
        if chat and template_sha256(lm.chat_template(lm.chat_template_name or True)) != chat.template_sha256:
            raise PathEvalError(f"model {model.name}: the chat template its tokenizer resolves is not the one read "
                                f"from {model.path}'s files: report this, with the checkpoint's tokenizer files")
        identity = model_identity(model.path, lm, options.device, tokenizer_hash)
        chat_provenance = chat_settings(plan, model)
        log.info("%s: %s (%s) on %s, %s, attention backend %s, decoding %s, tokenizer %s, max_length %d, data %s",
                 model.name, identity["model_type"], identity["variant"] or "transformers", options.device,
                 identity["dtype"], identity["attention_backend"] or "transformers' own",
                 identity["decoding"] or "transformers' generate", identity["tokenizer"], lm.max_length, plan.data_dir)
        lm.use_request_cache(resume_cache(options.out, model.name, identity | chat_provenance, lm.process_index))
        caches.append(lm.request_cache)
        saved = sum(lm.gather_object(len(lm.request_cache)))
        if writes:
            say_resuming(options.out, model.name, saved)
        with times.phase("requests"):
            results = [result for evaluator, items in evaluators for result in evaluator.run(lm, items, context)]
        counters = processes.gathered_counters(lm)
        for cache_reused, cache_answered in lm.gather_object((lm.request_cache.reused, lm.request_cache.answered)):
            reused, answered = reused + cache_reused, answered + cache_answered
        if writes:
            with times.phase("records"):
                run_folder.check_still_there(options.out)
                info = run_provenance(identity, plan.seed, plan.limit, options.batch_size, started, counters, env) | {
                    "model_source": model.source, "model_revision": model.revision}
                records += task_records(plan.suite, model.name, results, info, chat_provenance)
                write_lm_eval_layout(options.out, model.name, results, info, options.wandb_args,
                                     options.hf_hub_log_args, chat, bool(plan.chat and plan.chat.fewshot_as_multiturn))
        del lm, weights
        # the phases so far: a run stopped before its end (a budget, a signal) still says where its time went
        processes.write_timings(times, parallel, options.out, writes)
    with times.phase("write"):
        if writes:
            records += aggregate(plan.suite, records)
            run_folder.check_still_there(options.out)
            write_results(records, run_folder.results_file(options.out))
    processes.write_timings(times, parallel, options.out, writes)
    if writes and reused:  # also under --quiet: numbers that were not computed now are worth one line
        say(f"resumed: {reused} of {answered} requests and batches reused from "
            f"{run_folder.resume_folder(options.out)}", file=sys.stderr)
    processes.finish_processes()
    for cache in caches:  # the run is complete: the same command again is a new run, counted afresh
        cache.finish_run()
    return records
