"""What a kind of task is (`Kind`) and what its rules are handed and give back: the shape every
module of this package fills in once, for its own kind (path_eval/kinds/lm_eval.py, generated.py,
corpus.py, flipflop.py), and a test's or a user's kind the same way (docs/extending.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable

from path_eval.data import DatasetSplit

if TYPE_CHECKING:
    from path_eval.plan import PlannedItem
    from path_eval.plan.models import ModelReference
    from path_eval.suites import SuiteSpec, TaskSpec


@dataclass(frozen=True)
class Planning:
    """What a kind's planning rule reads besides the task and its length."""

    suite: SuiteSpec
    data_dir: Path
    seed: int
    limit: int | None


@dataclass
class PlannedFields:
    """What the plan learns of one (task, length) before a model loads. `fits(max_length)` raises
    when the item cannot run in a context of that many tokens (None: not known yet)."""

    data_files: list[Path] = field(default_factory=list)
    lm_eval_tasks: list[str] = field(default_factory=list)  # the names lm-eval keys results and its request cache by
    fits: Callable[[int | None], None] | None = None


@dataclass(frozen=True)
class SamplePairs:
    """How the paired tests (path_eval/reports/paired.py) read a kind's own per-sample log: each row
    is one sample, `key` its identity (the same sample in two runs has the same key), and the
    record's value is sum(numerator) / sum(denominator) over the rows (through exp for a
    perplexity). Rows with different `stratum` values are strata of equal weight."""

    key: Callable[[dict], Hashable]
    numerator: Callable[[dict], float]
    denominator: Callable[[dict], float]
    stratum: Callable[[dict], Hashable] | None = None
    exponential: bool = False


SAMPLED_OPTIONS = frozenset({"samples", "seeds"})  # what every sampled kind's tasks read


@dataclass(frozen=True)
class Kind:
    """One kind of task, everything that differs between kinds.

    `name`: the kind's name (a plan item's `kind`); `key`: the task key a suite names it by, and
    `options`: what that key holds, a pydantic model or `str`, validated as the suite loads and read
    as `task.options` (or `task.<key>`). `evaluator`: where its evaluator is, "module:Class", imported
    by the runner on first use (the evaluators import torch and sit above the suites that read this
    row: path_eval/evaluators/registry.py). `describe(task)`: what `eval.py list` prints.

    Its rules: `validate(task)` as the suite loads (a ValueError, shown with the task's place in the
    file); `check(task)` before any data is read; `check_length(task, length)`; `plan(task, length,
    planning)`: the item's data files and lm-eval names, checking its data (a missing file of an
    `optional` task skips the task); `check_model(task, model)`: refuses a model the task cannot run
    on, from the model's files, before any model loads. `log_names(item)`: the names of the item's
    per-sample logs (OUT/samples/MODEL/NAME.jsonl) its evaluator writes. `pairing`: how the paired
    tests read those logs; None: lm-eval's per-sample logs (doc, scores per metric). `splits(task,
    suite, lengths)`: the Hugging Face splits `download` fetches for the task (default none).
    `sample_scorer(task, suite)`: doc, [generation] -> {metric: score}, for a task `rescore` scores
    again from its logged generations (None: its records are kept as they are); `log_scorer`, for a
kind `rescore` scores from its own logs' rows. `prompts_chat(task)`: whether its prompts go through a
    chat template under `--apply-chat-template` (docs/chat-templates.md). `executes_code`: its tasks run
    only where the run allows code execution. What `report`
    compares with the suite's protocol follows from `key` and `reads` (`protocol_settings`)."""

    name: str
    key: str
    options: type
    evaluator: str
    describe: Callable[[TaskSpec], str]
    plan: Callable[[TaskSpec, int | None, Planning], PlannedFields]
    log_names: Callable[[PlannedItem], list[str]]
    needs_lengths: bool = True  # False: without lengths (its own or the suite's) the task runs once
    sampled: bool = False  # makes its samples per seed: item seeds, and the suite's `samples` count per seed
    # Context tokens a model needs for an item at length L; None: the kind's items do not set the run's context.
    context: Callable[[int], int] | None = None
    metrics: frozenset[str] | None = None  # the only metrics its tasks may report (None: any the registry has)
    validate: Callable[[TaskSpec], None] | None = None
    check: Callable[[TaskSpec], None] | None = None  # before any data is read
    # The task options besides every kind's (name, label, metrics, lengths, models, optional) its
    # tasks read, a sampled kind's samples and seeds aside: a suite that sets another one would be
    # silently ignored, so it is refused (`options_read`).
    reads: frozenset[str] = frozenset()
    check_length: Callable[[TaskSpec, int], None] | None = None
    check_model: Callable[[TaskSpec, ModelReference], None] | None = None
    pairing: SamplePairs | dict[str, SamplePairs] | None = None  # a dict: per metric (several in one log)
    splits: Callable[[TaskSpec, SuiteSpec, list[int] | None], list[DatasetSplit]] = lambda task, suite, lengths: []
    # Whether `download` fetches anything for the task, where `splits` would read more than the suite
    # (lm-eval's task configs) to say: `list` answers it without importing lm-eval. None: from `splits`.
    fetches: Callable[[TaskSpec, SuiteSpec], bool] | None = None
    sample_scorer: Callable[[TaskSpec, SuiteSpec], Callable | None] | None = None
    # `log_scorer(task, rows, seeds)`: per metric, (value, stderr) per seed, from the rows of an item's
    # logs alone, for a kind whose metrics are not means of per-sample scores (token tagging's ratios).
    log_scorer: Callable[[TaskSpec, list[dict], list[int]], dict[str, list[tuple[float, float | None]]]] | None = None
    # Whether a run with --apply-chat-template prompts the task through the chat template (text prompts;
    # a corpus, flip-flop or tagging task scores token sequences: never)
    prompts_chat: Callable[[TaskSpec], bool] = lambda task: False
    # Its evaluator runs model-written programs: the plan skips its tasks unless the run allows code
    # execution (`--allow-code-execution`), and refuses the flag where the sandbox cannot run.
    executes_code: bool = False

    def fetches_data(self, task: TaskSpec, suite: SuiteSpec) -> bool:
        """Whether `download` fetches a split for the task at its lengths (`list` says so)."""
        if self.fetches is not None:
            return self.fetches(task, suite)
        return bool(self.splits(task, suite, task.lengths or suite.lengths))

    def options_read(self) -> frozenset[str]:
        return self.reads | (SAMPLED_OPTIONS if self.sampled else frozenset())

    def protocol_settings(self) -> tuple[str, ...]:
        """The task settings `report` compares with the suite's protocol: the kind's options and every
        option its tasks read (a task's sample count is compared per item, after --limit)."""
        return (self.key, *sorted(self.options_read() - {"samples"}))


def sample_count(task: TaskSpec, suite: SuiteSpec, limit: int | None) -> int:
    """Samples per length and seed of a task of a sampled kind: the task's, else the suite's,
    capped by --limit."""
    count = task.samples or suite.samples
    return min(limit, count) if limit else count


def length_log_name(task: str, length: int | None) -> str:
    """TASK@LENGTH: the one per-sample log of a task at a length (corpus blocks, flip-flop sequences)."""
    return f"{task}@{length}"


def one_log_per_length(item: PlannedItem) -> list[str]:
    return [length_log_name(item.task, item.length)]


def lm_eval_log_names(item: PlannedItem) -> list[str]:
    """One log per lm-eval task (a generated task: one per seed), named as lm-eval names the task;
    a task without a length keeps the suite task's name."""
    return list(item.lm_eval_tasks) if item.length is not None else [item.task]


def data_split(task: TaskSpec) -> list[DatasetSplit]:
    """The split a task's `data:` names (a generator's input), as `download` fetches it."""
    return [DatasetSplit(task.data.hf_path, task.data.hf_config, task.data.split)] if task.data else []
