"""The interface every evaluator implements (`Evaluator`) and what it hands back. An evaluator runs
the plan items of its kind of task on a loaded model and returns TaskResults (per task and length:
metric values and stderrs per seed, n, the per-sample logs' inputs, the data read); the results
stage turns them into records. Which evaluator runs which kind: registry.py.

Each TaskResult also carries lm-eval's own output for it (`LmEvalOutput`), which the run writes in
lm-eval's layout beside results.json: what `simple_evaluate` returned for lm-eval's and the generated
tasks, and the same shape filled from our numbers for the tasks lm-eval does not run."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from path_eval import run_folder
from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan

if TYPE_CHECKING:
    from path_eval.models.chat_template import ChatLayout


@dataclass
class EvaluationContext:
    """What an evaluator needs besides the model (which answers finished requests from its resume
    cache): the plan, the model's entry in it, where the run writes, its tokenizer's hash (frozen
    samples are made per tokenizer), and under a chat template the layout generated prompts take."""

    plan: ResolvedPlan
    model: PlannedModel
    out: Path
    tokenizer_sha256: str
    bootstrap_iters: int = 100000
    chat: ChatLayout | None = None

    @property
    def samples_dir(self) -> Path:
        return run_folder.samples_folder(self.out, self.model.name)

    def sample_log(self, name: str) -> Path:
        """The model's per-sample log `name` (one of its kind's `log_names`)."""
        return run_folder.sample_log(self.out, self.model.name, name)


@dataclass
class PositionBucket:
    """Perplexity over token positions first..last of every block (corpus tasks)."""

    first: int
    last: int
    value: float
    stderr: float | None


@dataclass
class TaskResult:
    """One task at one length. `metrics`: per metric, (value, stderr) per seed of `seeds` (one pair
    for a task run without sample seeds)."""

    task: str
    length: int | None
    metrics: dict[str, list[tuple[float, float | None]]]
    n: int
    data_files: list[Path]
    data_fingerprint: str | None
    seeds: list[int] = field(default_factory=list)  # generated tasks: the seeds their samples were made from
    num_fewshot: int = 0
    truncate_middle: int | None = None
    samples: list[dict] = field(default_factory=list)  # lm-eval's per-sample dicts (length buckets read them)
    position_buckets: list[PositionBucket] = field(default_factory=list)
    # The task's protocol choices for the provenance (BABILong: data_source, sample_set, prompt_parts;
    # LongBench: longbench_rule).
    protocol: dict = field(default_factory=dict)
    lm_eval: LmEvalOutput | None = None


@dataclass
class LmEvalOutput:
    """lm-eval's output for the lm-eval tasks behind one TaskResult (one per seed of a generated
    task). `tasks`: per lm-eval task name, its entries in the sections of `simple_evaluate`'s dict
    keyed by task ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
    "samples", ...); `run`: that dict's run-wide keys (config, git_hash, date, environment), empty
    for tasks lm-eval does not run."""

    tasks: dict[str, dict[str, object]]
    run: dict[str, object] = field(default_factory=dict)


TASK_SECTIONS = ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "samples",
                 "group_subtasks")  # the sections of lm-eval's output keyed by task name


def lm_eval_output(output: dict, names: list[str]) -> LmEvalOutput:
    """The entries of tasks `names` in `simple_evaluate`'s output, kept as lm-eval gave them."""
    return LmEvalOutput(tasks={name: {section: output[section][name] for section in TASK_SECTIONS
                                      if name in output.get(section, {})} for name in names},
                        run={key: value for key, value in output.items() if key not in TASK_SECTIONS + ("groups",)})


def native_output(name: str, metrics: dict[str, tuple[float, float | None]], docs: list[dict],
                  scores: list[dict[str, object]], kind: str) -> LmEvalOutput:
    """lm-eval's shape for a task lm-eval does not run (a corpus at one length, flip-flop or token
    tagging at one seed): each metric (value, stderr) as lm-eval reports one ("METRIC,none" and its
    stderr), and a sample per logged row: the row as `doc`, its scores by metric name (a pair whose
    sums give the aggregate, as lm-eval keeps word_perplexity's (log-likelihood, words)). Blocks and
    sequences are token ids, not text, so requests, responses and target are empty (their hashes
    those of the empty string)."""
    from lm_eval.utils import hash_string

    from path_eval.metrics.registry import metric_entry

    higher = {metric: metric_entry(metric).higher_is_better for metric in metrics}
    samples = [{"doc_id": index, "doc": doc, "target": "", "arguments": [], "resps": [], "filtered_resps": [],
                "filter": "none", "metrics": list(metrics),
                "doc_hash": hash_string(json.dumps(doc, indent=2, ensure_ascii=False)),  # lm-eval's recipe
                "prompt_hash": hash_string(""), "target_hash": hash_string(""), **score}
               for index, (doc, score) in enumerate(zip(docs, scores))]
    results = {"name": name, "alias": name, "sample_len": len(samples)}
    for metric, (value, stderr) in metrics.items():
        results |= {f"{metric},none": value, f"{metric}_stderr,none": "N/A" if stderr is None else stderr}
    return LmEvalOutput(tasks={name: {
        "results": results,
        "configs": {"task": name, "output_type": kind,
                    "metric_list": [{"metric": metric, "higher_is_better": higher[metric]} for metric in metrics],
                    "metadata": {"evaluator": "path-eval"}},
        "versions": None, "n-shot": 0, "higher_is_better": higher,
        "n-samples": {"original": len(samples), "effective": len(samples)}, "samples": samples}})


@dataclass
class FrozenSet:
    """One set of samples to generate and freeze before the model is needed (the model loads
    meanwhile; under data parallelism each process freezes its share of the sets). `tokens`: its
    size in tokens, the cost its share is balanced by; `label`: TASK@LENGTH/sSEED, for whoever times
    or reports the sets (benchmarks.freezing)."""

    tokens: int
    freeze: Callable[[], object]
    label: str = ""

    @classmethod
    def of_item(cls, item: PlannedItem, seed: int, freeze: Callable[[], object]) -> FrozenSet:
        """The set of one plan item and seed: its samples at the item's length."""
        return cls(item.length * item.samples, freeze, f"{item.task}@{item.length}/s{seed}")


class Evaluator(Protocol):
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        """The sample sets `run` will read, to freeze with the tokenizer alone (none for data read as is)."""

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        """Results of `items` on `lm`; none on a data-parallel process other than the first."""
