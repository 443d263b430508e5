"""The evaluators: one per kind of task, behind one interface. Each runs its plan items on a loaded
model and returns TaskResults (per task and length: metric values and stderrs per seed, n, the
per-sample logs' inputs, the data read); the results stage turns them into records.

- `LmEvalEvaluator` (lm_eval.py): tasks lm-eval defines, adapted where the suite says;
- `GeneratedEvaluator` (generated.py): RULER and PhoneBook samples, frozen, then evaluated by lm-eval;
- `CorpusEvaluator` (corpus.py): per-position perplexity of corpora;
- `FlipFlopEvaluator` (flipflop.py): frozen flip-flop sequences, one forward each."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan
from path_eval.samples import slug


@dataclass
class EvaluationContext:
    """What an evaluator needs besides the model (which answers finished requests from its resume
    cache): the plan, the model's entry in it, where the run writes, its tokenizer's hash (frozen
    samples are made per tokenizer)."""

    plan: ResolvedPlan
    model: PlannedModel
    out: Path
    tokenizer_sha256: str
    bootstrap_iters: int = 100000

    @property
    def samples_dir(self) -> Path:
        return self.out / "samples" / slug(self.model.name)


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


@dataclass
class FrozenSet:
    """One set of samples to generate and freeze before the model is needed (the model loads
    meanwhile; under data parallelism each process freezes its share of the sets). `tokens`: its
    size in tokens, the cost its share is balanced by."""

    tokens: int
    freeze: Callable[[], object]


class Evaluator(Protocol):
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        """The sample sets `run` will read, to freeze with the tokenizer alone (none for data read as is)."""

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        """Results of `items` on `lm`; none on a data-parallel process other than the first."""
