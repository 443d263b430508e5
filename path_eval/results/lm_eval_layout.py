"""lm-eval's own output layout beside results.json, written by lm-eval's `EvaluationTracker`: per
model, OUT/lm_eval/<model>/results_<date>.json (lm-eval's results dict: results, configs,
versions, n-shot, higher_is_better, n-samples, config, task_hashes, ...) and
samples_<task>_<date>.jsonl (its sample fields: doc_id, doc, target, arguments, resps,
filtered_resps, filter, metrics, doc_hash, prompt_hash, target_hash and the metric values), so
that lm-eval's readers, sample viewers and loggers take a run of ours as one of lm-eval's. The
output is what lm-eval's evaluator gave each evaluator (and its shape filled from our numbers for
corpora and flip-flop, `path_eval.evaluators.native_output`). `--wandb-args` hands the same
output to lm-eval's `WandbLogger`, `--hf-hub-log-args` go to the tracker."""
from __future__ import annotations

import inspect
import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.evaluators import TASK_SECTIONS, TaskResult
from path_eval.samples.logs import slug

if TYPE_CHECKING:
    from path_eval.models.chat_template import ChatLayout

log = logging.getLogger("path_eval")

PUSH_KEYS = ("push_results_to_hub", "push_samples_to_hub")


def merged_output(results: list[TaskResult], info: dict) -> dict:
    """One lm-eval results dict for a model's tasks (its evaluators' `simple_evaluate` calls and the
    tasks lm-eval does not run), with the run-wide keys of its first lm-eval call; a model that made
    none gets lm-eval's config keys from the provenance."""
    merged: dict = {section: {} for section in TASK_SECTIONS}
    run: dict = {}
    for result in results:
        if result.lm_eval is None:
            continue
        for name, sections in result.lm_eval.tasks.items():
            for section, value in sections.items():
                merged[section][name] = value
        run = run or result.lm_eval.run
    return merged | (run or {
        "config": {"model": "path", "model_args": f"pretrained={info['model_path']},dtype={info['dtype']}",
                   "batch_size": info["batch_size"], "device": info["device"], "limit": info["limit"],
                   "random_seed": info["seed"]},
        "lm_eval_version": info["lm_eval_version"], "transformers_version": info["transformers_version"],
        "max_length": info["max_length"]})


def check_hub_log_args(args: dict) -> None:
    """`--hf-hub-log-args` are EvaluationTracker's arguments (its output path is the run's); a run is
    offline, so it prepares the hub layout and never pushes."""
    from lm_eval.loggers import EvaluationTracker

    allowed = sorted(set(inspect.signature(EvaluationTracker.__init__).parameters) - {"self", "output_path", "token"})
    for key in args:
        if key not in allowed:
            raise PathEvalError(f"--hf-hub-log-args {key}: not an argument of lm-eval's EvaluationTracker: give "
                                f"{', '.join(allowed)}")
    for key in PUSH_KEYS:
        if args.get(key):
            raise PathEvalError(f"--hf-hub-log-args {key}: `eval.py run` stays offline and never pushes: leave it "
                                "out and upload the run's lm_eval folder afterwards (hf upload ORG/REPO OUT/lm_eval "
                                "--repo-type dataset)")


def check_wandb_args(args: dict) -> None:
    """`--wandb-args` are `wandb.init`'s arguments; W&B is the optional extra `[trackers]`."""
    try:
        import wandb
    except ImportError:
        raise PathEvalError("--wandb-args needs the wandb package: pip install 'path-eval[trackers]'") from None
    allowed = set(inspect.signature(wandb.init).parameters)
    for key in args:
        if key not in allowed and key != "step":  # lm-eval's WandbLogger takes `step` itself
            raise PathEvalError(f"--wandb-args {key}: not an argument of wandb.init: give some of "
                                f"{', '.join(sorted(allowed))}")


def log_to_wandb(output: dict, samples: dict, model_name: str, wandb_args: dict, out: Path) -> None:
    """One W&B run per model through lm-eval's WandbLogger: its metrics, tables and the results and
    samples as artifacts. Offline unless `mode` says otherwise (a run reaches no network; `wandb sync`
    uploads it); named after the model unless `name` is given; its files in the run folder
    (OUT/wandb/) unless `dir` is given, where W&B would write into the working folder. A failure is a
    warning, as in lm-eval: the run's files are written already."""
    from lm_eval.loggers import WandbLogger

    logger = WandbLogger(init_args={"name": model_name, "mode": "offline", "dir": str(Path(out))} | wandb_args)
    try:
        logger.post_init(output)
        logger.log_eval_result()
        logger.log_eval_samples(samples)
    except Exception as err:  # noqa: BLE001 (lm-eval's own CLI goes on the same way)
        log.warning("logging %s to W&B failed: %s", model_name, err)
    finally:
        logger.run.finish()


def write_lm_eval_layout(out: Path, model_name: str, results: list[TaskResult], info: dict,
                         wandb_args: dict | None = None, hub_log_args: dict | None = None,
                         chat: ChatLayout | None = None, fewshot_as_multiturn: bool = False) -> Path | None:
    """OUT/lm_eval/<model>/ through lm-eval's EvaluationTracker, replacing any earlier one of the
    same model as a whole (a resumed or repeated run leaves one results file and one samples file
    per task, never an appended copy); returns the folder (None when the model ran no task). `chat`:
    the run's chat template and system instruction, which lm-eval's config records (with the
    template's hash, lm-eval's own)."""
    from lm_eval.loggers import EvaluationTracker

    output = merged_output(results, info)
    if not output["results"]:
        return None
    samples = output.pop("samples")
    if wandb_args is not None:
        log_to_wandb(output, samples, model_name, dict(wandb_args), out)
    root = run_folder.lm_eval_folder(out)
    staging, replaced = root / ".partial", root / ".replaced"
    for leftover in (staging, replaced):  # of a write that was interrupted
        shutil.rmtree(leftover, ignore_errors=True)
    tracker = EvaluationTracker(output_path=str(staging), **(hub_log_args or {}))
    config = tracker.general_config_tracker
    config.log_experiment_args(model_source="path", model_args={"pretrained": model_name},
                               system_instruction=chat.system_instruction if chat else None,
                               chat_template=chat.template if chat else None, fewshot_as_multiturn=fewshot_as_multiturn)
    config.start_time = time.perf_counter() - info["wall_time_s"]  # the model's evaluation time, not the writer's
    # the model's folder as in samples/ (lm-eval's own sanitising keeps `..` and leading dots)
    config.model_name_sanitized = slug(model_name)
    written, target = staging / config.model_name_sanitized, root / config.model_name_sanitized
    try:
        tracker.save_results_aggregated(results=output, samples=samples)  # adds keys to `output`, a dict of ours
        for name in output["configs"]:
            # the tracker replaces four fields of each sample dict (never changes a value in place):
            # it gets copies of the dicts alone, the TaskResults' samples stay as they are
            tracker.save_results_samples(task_name=name, samples=[dict(sample) for sample in samples[name]])
        expected = 1 + len(output["configs"])
        if len(list(written.glob("results_*.json")) + list(written.glob("samples_*.jsonl"))) != expected:
            # the tracker logs its write errors as warnings and goes on: a missing file stops the run here
            raise PathEvalError(f"lm-eval's EvaluationTracker did not write all {expected} files of {model_name} "
                                f"in {written}: check the disk (free space, permissions) and run the same command "
                                "again")
        if target.exists():
            target.rename(replaced)
        written.rename(target)
    finally:  # an interrupt or a full disk leaves no half-written layout behind; the same command writes it anew
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(replaced, ignore_errors=True)
    return target
