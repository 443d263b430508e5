"""The kinds of task, in one table (`KINDS`): for each kind, the suite key that names it, the plan
stage's rules for its tasks (checks, whether it runs at context lengths and makes samples per seed,
the context its items need, what the plan records of each item), the names of its per-sample logs
and how `compare`'s paired tests read them. A task's kind is `TaskSpec.kind`; which evaluator runs
each kind is the one other table, `path_eval.evaluators.registry.EVALUATORS`, keyed by the same
names; the runner runs the kinds in this table's order, so records list them in it.

A new kind is a task module (path_eval/tasks/), a row here, an evaluator and its row in EVALUATORS
(docs/extending.md). The table sits below every stage that reads it (suites, plan, results,
reports, the command line): its rules import the task modules they call when they run."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable

from path_eval.errors import PathEvalError

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
    """One kind of task. `key`: the TaskSpec key a suite names it by; `options`: what that key holds
    (a pydantic model or str) for a kind TaskSpec declares no field for (None: the declared field's
    type). `plan(task, length, planning)`: the item's data files and lm-eval names, checking its
    data (a missing file of an `optional` task skips the task). `check_model(task, model)`: refuses
    a model the task cannot run on, from the model's files, before any model loads. `log_names(item)`:
    the names of the item's per-sample logs (OUT/samples/MODEL/NAME.jsonl) its evaluator writes.
    `pairing`: how the paired tests read those logs; None: lm-eval's per-sample logs (doc, scores
    per metric)."""

    key: str
    describe: Callable[[TaskSpec], str]  # what the task is, for `eval.py list`
    plan: Callable[[TaskSpec, int | None, Planning], PlannedFields]
    log_names: Callable[[PlannedItem], list[str]]
    options: type | None = None
    needs_lengths: bool = True  # False: without lengths (its own or the suite's) the task runs once
    sampled: bool = False  # makes its samples per seed: item seeds, and the suite's `samples` count per seed
    # Context tokens a model needs for an item at length L; None: the kind's items do not set the run's context.
    context: Callable[[int], int] | None = None
    metrics: frozenset[str] | None = None  # the only metrics its tasks may report (None: any the registry has)
    check: Callable[[TaskSpec], None] | None = None  # before any data is read
    # The TaskSpec options besides every kind's (name, label, metrics, lengths, models, optional) its
    # tasks read, a sampled kind's samples and seeds aside: a suite that sets another one would be
    # silently ignored, so it is refused (`options_read`).
    reads: frozenset[str] = frozenset()
    check_length: Callable[[TaskSpec, int], None] | None = None
    check_model: Callable[[TaskSpec, ModelReference], None] | None = None
    pairing: SamplePairs | None = None

    def options_read(self) -> frozenset[str]:
        return self.reads | (SAMPLED_OPTIONS if self.sampled else frozenset())


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


# ---------------------------------------------------------------- lm_eval: tasks lm-eval defines

def check_room_for_generation(tasks: list, max_length: int | None) -> None:
    """A middle-truncated prompt plus the task's new tokens must fit the context, or the model
    adapter would cut its left end too."""
    for task in tasks:
        new_tokens = task.config["generation_kwargs"]["max_gen_toks"] if task.truncate_middle else 0
        if task.truncate_middle and max_length and task.truncate_middle + new_tokens > max_length:
            raise PathEvalError(f"task {task.spec.name}: truncate_middle {task.truncate_middle} + {new_tokens} new "
                                f"tokens exceed max_length {max_length}: raise --max-length or lower the suite's "
                                "truncate_middle (in a copy of the suite)")


def _plan_lm_eval(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks import build_task

    built = build_task(task, planning.data_dir, planning.suite, length, planning.seed, planning.limit)
    return PlannedFields(data_files=list(built.files), lm_eval_tasks=[built.name],
                         fits=lambda max_length: check_room_for_generation([built], max_length))


# ---------------------------------------------------------------- generated: RULER, PhoneBook

def _check_generated(task: TaskSpec) -> None:
    """A known generator, and metrics the registry scores on generated samples."""
    from path_eval.tasks.generated import check_generated_metrics, check_generator

    check_generator(task.generator)
    check_generated_metrics(task)


def _check_generated_length(task: TaskSpec, length: int) -> None:
    from path_eval.tasks.generated import check_length

    check_length(task, length)


def _plan_generated(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks.generated import input_files, lm_eval_name, sample_seeds

    files = input_files(task, planning.data_dir, planning.suite.name)
    return PlannedFields(data_files=files,
                         lm_eval_tasks=[lm_eval_name(task, length, s) for s in sample_seeds(task, planning.seed)])


# ---------------------------------------------------------------- corpus: perplexity by position

def _check_block(task: TaskSpec, length: int) -> None:
    if length < 2:
        raise PathEvalError(f"task {task.name}: a block of {length} token(s) has nothing to predict: give a "
                            "longer --lengths (e.g. 4k)")


def _plan_corpus(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks.extrapolation import documents

    return PlannedFields(data_files=documents(task.corpus, planning.data_dir, planning.suite.name)[1])


def _describe_corpus(task: TaskSpec) -> str:
    return "corpus " + (task.corpus.hf_path or task.corpus.folder or task.corpus.package_file or "python stdlib")


# ---------------------------------------------------------------- flipflop: FFL(p_ignore) sequences

def _check_flipflop_length(task: TaskSpec, length: int) -> None:
    if length < 4 or length % 2:
        raise PathEvalError(f"task {task.name}: a flip-flop sequence is an even number of at least 4 tokens, not "
                            f"{length}: give --lengths 512 (the paper's)")


def _plan_flipflop(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    return PlannedFields()  # the sequences are made from the seeds: nothing to read


def _check_flipflop_model(task: TaskSpec, model: ModelReference) -> None:
    """The sequences are ids of the flip-flop vocabulary: a model whose tokenizer files give the
    symbols other ids is refused here. A tokenizer `token_id_lookup` cannot read without torch is
    checked by the evaluator, once loaded."""
    from path_eval.models.tokenizer import token_id_lookup
    from path_eval.tasks.flipflop import check_vocabulary

    token_id = token_id_lookup(model.path)
    if token_id is not None:
        check_vocabulary(token_id, model.name, task.name)


# In this order the runner runs the kinds and records list their tasks.
KINDS: dict[str, Kind] = {
    "lm_eval": Kind(key="lm_eval_task", describe=lambda task: f"lm-eval {task.lm_eval_task}", plan=_plan_lm_eval,
                    log_names=lm_eval_log_names, needs_lengths=False,
                    reads=frozenset({"num_fewshot", "stop", "data", "adapter", "prompt_edits"})),
    "generated": Kind(key="generator", describe=lambda task: f"generated by {task.generator}", plan=_plan_generated,
                      log_names=lm_eval_log_names, sampled=True, reads=frozenset({"stop", "data"}),
                      context=lambda length: length + 1,  # a sample fills its length without BOS; the model reads BOS
                      check=_check_generated, check_length=_check_generated_length),
    "corpus": Kind(key="corpus", describe=_describe_corpus, plan=_plan_corpus, log_names=one_log_per_length,
                   context=lambda length: length, check_length=_check_block,
                   pairing=SamplePairs(key=lambda row: row["tokens_sha256"],
                                       numerator=lambda row: sum(row["nll_sum"]),
                                       denominator=lambda row: sum(row["count"]), exponential=True)),
    "flipflop": Kind(key="flipflop", describe=lambda task: f"flip-flop p_ignore {task.flipflop.p_ignore}",
                     plan=_plan_flipflop, log_names=one_log_per_length, sampled=True, context=lambda length: length,
                     metrics=frozenset({"flipflop_error"}), check_length=_check_flipflop_length,
                     check_model=_check_flipflop_model,
                     pairing=SamplePairs(key=lambda row: (row["seed"], row["doc_id"]),
                                         numerator=lambda row: row["wrong"], denominator=lambda row: row["reads"],
                                         stratum=lambda row: row["seed"])),
}
