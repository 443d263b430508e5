"""The suite schema: the pydantic models a suite (`suites/<name>.yaml`, data, not code) is validated
into. A suite says which tasks, which metrics of each, which context lengths, and how the table
aggregates them; path_eval/suites/loader.py reads the files."""
from __future__ import annotations

import bisect
import fnmatch
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, Strict, TypeAdapter,
                      ValidationError, field_validator, model_serializer, model_validator)

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS, kind_of_key
from path_eval.metrics.registry import REGISTRY


def parse_length(value: int | str) -> int:
    """4096, "4096", "4k", "4K" -> 4096."""
    text = str(value).strip().lower()
    try:
        length = int(text[:-1]) * 1024 if text.endswith("k") else int(text)
    except ValueError:
        raise PathEvalError(f"length {value!r} is not a number of tokens: give e.g. 4096 or 4k") from None
    if length < 0:
        raise PathEvalError(f"length {value!r} is negative: give a number of tokens, e.g. 4096 or 4k")
    return length


def parse_lengths(values, where: str) -> list[int]:
    """A list of context lengths as a suite or `--lengths` writes them, in tokens, or one error line:
    a single number is not a list, and one length given twice (1k and 1024) would count its samples twice."""
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise PathEvalError(f"{where} {values!r} is not a list of lengths: give a list, e.g. [4k, 8k]")
    lengths = [parse_length(v) for v in values]
    repeated = next((length for i, length in enumerate(lengths) if length in lengths[:i]), None)
    if repeated is not None:
        raise PathEvalError(f"{where} {','.join(map(str, values))} names length {repeated} twice: give each length "
                            "once")
    return lengths


def suite_lengths(value) -> list[int]:
    """A suite's `lengths`, a problem as the ValueError that names its place in the file."""
    try:
        return parse_lengths(value, "lengths")
    except PathEvalError as err:
        raise ValueError(str(err)) from None


# A count or size in a suite: a whole number as YAML writes one, never `true` (which lax validation
# would read as 1) nor `2.0`.
Whole = Annotated[int, Strict()]

# Context lengths as a suite writes them (4096, "4k"), as numbers of tokens.
Lengths = Annotated[list[int], BeforeValidator(suite_lengths)]


def known_metric(name: str) -> str:
    """A metric name the registry has (its direction, unit and scorer live there, not in suites)."""
    if name not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}: choose one of {', '.join(REGISTRY)}")
    return name


class MetricSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str

    @model_validator(mode="before")
    @classmethod
    def _no_second_source(cls, value):
        if isinstance(value, dict) and "higher_is_better" in value:
            raise ValueError("higher_is_better comes from the metric registry (path_eval/metrics/registry.py), "
                             "not the suite: remove it")
        return value

    @field_validator("name")
    @classmethod
    def _registered(cls, value: str) -> str:
        return known_metric(value)


class DataSpec(BaseModel):
    """A Hugging Face split a task reads from the data dir: a generator's input (RULER's QA dev sets),
    or the rows an lm-eval task reads in place of its config's dataset (LongBench-E's original files
    instead of lm-eval's mirror). BABILong's tasks give no hf_path: the suite's `babilong` options
    choose the hub set (or the regenerated rows)."""

    model_config = ConfigDict(extra="forbid")
    hf_path: str | None = None
    hf_config: str | None = None
    split: str = "validation"


class PromptEdit(BaseModel):
    """One exact replacement in an lm-eval prompt template (where lm-eval's text differs from the
    original benchmark's); `old` must occur exactly once."""

    model_config = ConfigDict(extra="forbid")
    old: str = Field(min_length=1)
    new: str


class LengthBuckets(BaseModel):
    """Per-sample scores grouped by a numeric doc field: bucket i holds edges[i-1] <= value < edges[i]
    (LongBench-E: `length` in words, edges 4000 and 8000, buckets 0-4k, 4-8k, 8k+). `tasks`: the
    tasks whose docs carry the field (empty: every task of the suite)."""

    model_config = ConfigDict(extra="forbid")
    field: str
    edges: list[Whole] = Field(min_length=1)
    labels: list[str]
    tasks: list[str] = []

    @model_validator(mode="after")
    def _one_label_per_bucket(self):
        if len(self.labels) != len(self.edges) + 1 or len(set(self.labels)) != len(self.labels):
            raise ValueError("length_buckets needs one distinct label more than it has edges")
        if self.edges != sorted(set(self.edges)):
            raise ValueError("length_buckets edges must increase")
        return self

    def label(self, value: float) -> str:
        return self.labels[bisect.bisect_right(self.edges, value)]

    def applies_to(self, task: str) -> bool:
        return not self.tasks or task in self.tasks


class LongBenchRule(BaseModel):
    """How LongBench predictions are scored (DESIGN.md §4.4): which datasets' predictions are cut to
    their first line after leading newlines (task names, or "all"), and to how many decimals each
    dataset cell (all samples, and each length bucket) is rounded once shown x100 (None: not rounded)."""

    model_config = ConfigDict(extra="forbid")
    first_line: list[str] | Literal["all"] = []
    cell_decimals: Whole | None = Field(default=None, ge=0)

    def cuts_first_line(self, task: str) -> bool:
        return self.first_line == "all" or task in self.first_line


class TaskSpec(BaseModel):
    """One task of a suite, of one kind: the task gives exactly one kind's key (path_eval/kinds/),
    holding that kind's options, e.g. `lm_eval_task: piqa` (an lm-eval task, which defines data,
    prompt and metric), `corpus: {...}` (a corpus scored for perplexity by token position),
    `generator: ruler/niah_single_1` (samples we generate and freeze per length) or `flipflop:
    {p_ignore: 0.8}`; `task.kind` names the kind, `task.options` (or `task.<key>`) holds them.
    The fields below are the options every kind may read, each kind saying which (`Kind.reads`):
    `samples` per length and seed and `seeds` seeds from the run's seed on (a sampled kind's),
    `stop` sequences and `data` rows (a generator's input; an adapted lm-eval task's rows in place
    of its config's dataset), `num_fewshot`, and an `adapter` (path_eval/tasks: "longbench",
    "babilong") rewriting an lm-eval task's config to the original benchmark's rules, with
    `prompt_edits` to its template (LongBench's first-line cut is the suite's `longbench_rule`).
    `lm_eval_filter`: which of an lm-eval task's filters its metrics are read from (GSM8K's
    "strict-match" or "flexible-extract"; unset: its config's first, "none" without filters).
    `optional`: a task whose input data is missing is skipped with a notice, not an error.
    `lengths`: the task's own context lengths, in place of the suite's. `models`: the models (their
    names in the run: folder names, e.g. the zoo's) the task runs on; empty: every model.
    `paper_chat_template`: whether the paper's rows for the task were prompted through a chat
    template (None: the suite's `paper_chat_template`); `report` names a run that differs."""

    model_config = ConfigDict(extra="forbid")
    name: str
    metrics: list[MetricSpec] = Field(min_length=1)
    num_fewshot: Whole = Field(default=0, ge=0)
    label: str | None = None
    samples: Whole | None = Field(default=None, gt=0)
    seeds: Whole = Field(default=1, gt=0, le=2**32)  # numpy has 2**32 seeds
    stop: list[Annotated[str, Field(min_length=1)]] = []  # an empty stop sequence would end every generation at once
    data: DataSpec | None = None
    optional: bool = False
    adapter: str | None = None
    prompt_edits: list[PromptEdit] = []
    lm_eval_filter: str | None = Field(default=None, min_length=1)
    lengths: Lengths = []
    models: list[str] = []
    paper_chat_template: bool | None = None

    # The task's kind (its name in KINDS) and what the task gives under the kind's key, validated by
    # the kind's `options` type.
    _kind: str = PrivateAttr()
    _options: Any = PrivateAttr()

    @model_validator(mode="wrap")
    @classmethod
    def _one_kind(cls, value, handler):
        """Exactly one kind's key (path_eval/kinds/), its options as the kind's `options` type reads
        them, no option the kind does not read, the metrics it allows, and its own rules (`validate`).
        A kind's key given as null is no key: older run folders' suite.json hold every built-in key,
        null but one."""
        if not isinstance(value, dict):
            return handler(value)  # a TaskSpec already (validated when made), or what pydantic refuses
        given = {key: value[key] for key in value if value[key] is not None and kind_of_key(key)}
        task = handler({key: v for key, v in value.items() if not kind_of_key(key)})  # unknown keys fail here
        if len(given) != 1:
            keys = [kind.key for kind in KINDS.values()]
            raise ValueError(f"a task needs exactly one of {', '.join(keys[:-1])} and {keys[-1]}"
                             + (f", not {' and '.join(given)}" if given else ""))
        [(key, options)] = given.items()
        kind = kind_of_key(key)
        try:
            options = TypeAdapter(kind.options).validate_python(options)
        except ValidationError as err:  # its errors under the key, as a field's would be
            raise ValidationError.from_exception_data(cls.__name__, [
                {"type": e["type"], "loc": (key, *e["loc"]), "input": e["input"], **{k: e[k] for k in ("ctx",) if k in e}}
                for e in err.errors()]) from None
        task._kind, task._options = kind.name, options
        shared = {option for other in KINDS.values() for option in other.options_read()}
        unread = sorted(option for option in shared - kind.options_read()
                        if getattr(task, option) != cls.model_fields[option].get_default(call_default_factory=True))
        if unread:
            raise ValueError(f"a {kind.name} task does not read {', '.join(unread)}: remove "
                             f"{'it' if len(unread) == 1 else 'them'}")
        if kind.metrics is not None and any(m.name not in kind.metrics for m in task.metrics):
            raise ValueError(f"a {kind.name} task reports the {', '.join(sorted(kind.metrics))} metric"
                             f"{'s' if len(kind.metrics) > 1 else ''} only")
        if kind.validate:
            kind.validate(task)
        return task

    @model_validator(mode="after")
    def _data_source(self):
        if self.data and self.data.hf_path is None and self.adapter != "babilong":
            raise ValueError("data needs hf_path (only BABILong's tasks leave it to the suite's babilong options)")
        return self

    @model_serializer(mode="wrap")
    def _options_under_the_kinds_key(self, handler, info):
        """The kind's options written under its key, after the task's name, as a suite gives them."""
        data = handler(self)
        kind = KINDS[self._kind]
        options = TypeAdapter(kind.options).dump_python(self._options, mode=info.mode,
                                                         exclude_defaults=info.exclude_defaults,
                                                         exclude_none=info.exclude_none)
        return {"name": data.pop("name"), kind.key: options, **data}

    @property
    def kind(self) -> str:
        """The name of the task's kind: the row of path_eval.kinds.KINDS whose key the task gives."""
        return self._kind

    @property
    def options(self):
        """What the task gives under its kind's key, as the kind's `options` type reads it."""
        return self._options

    def setting(self, name: str):
        """A task option by name; a kind's key reads as the task's options under it (None for a task
        of another kind), as `report`'s protocol check compares them."""
        kind = kind_of_key(name)
        if kind is None:
            return getattr(self, name)
        return self._options if kind.name == self._kind else None

    def __getattr__(self, name: str):
        """A kind's key reads as `setting(key)`: `task.corpus` is a corpus task's CorpusSpec, None for a
        task of another kind (a key a model attribute shadows, as `copy`, reads through `options`)."""
        if name.startswith("_") or kind_of_key(name) is None:
            return super().__getattr__(name)
        return self.setting(name)

    @field_validator("metrics", mode="before")
    @classmethod
    def _names_to_specs(cls, value):
        if not isinstance(value, list):
            raise ValueError(f"metrics {value!r} is not a list: give a list of metric names, e.g. [{value}]"
                             if isinstance(value, str) else f"metrics {value!r} is not a list of metric names")
        return [{"name": v} if isinstance(v, str) else v for v in value]


class BabilongOptions(BaseModel):
    """How the suite's BABILong tasks run (booydar/babilong's switches). `source`: `hub` reads the
    published samples, `regenerated` makes them here from bAbI and public-domain books
    (path_eval/tasks/babilong_regenerated.py). `sample_set`: `1k` (RMT-team/babilong-1k-samples)
    or `100` (RMT-team/babilong); unset, the originals' choice per length: 1k up to 32k, 100 above.
    The three prompt parts, each on or off as in the original's run_model_on_babilong.py."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["hub", "regenerated"] = "hub"
    sample_set: Literal["1k", "100"] | None = None
    instruction: bool = True
    examples: bool = True
    post_prompt: bool = True

    @field_validator("sample_set", mode="before")
    @classmethod
    def _as_text(cls, value):
        return None if value is None else str(value)  # YAML reads `100` as a number


class AggregateSpec(BaseModel):
    """A mean of other results ("task/metric" each): a plain one, each part alike (`weights: tasks`,
    Table 2's Avg over six accuracies), or over samples, each part weighed by its sample count
    (`weights: samples`: MMLU's subjects as lm-eval's mmlu group and the paper's numbers average them)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    metric: str
    mean_of: list[str] = Field(min_length=1)
    label: str | None = None
    weights: Literal["tasks", "samples"] = "tasks"

    @field_validator("metric")
    @classmethod
    def _registered(cls, value: str) -> str:
        return known_metric(value)


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    tasks: list[TaskSpec] = Field(min_length=1)
    aggregates: list[AggregateSpec] = []
    lengths: Lengths = []
    samples: Whole = Field(default=500, gt=0)  # per generated task, length and seed, unless the task says
    max_length: Whole | None = Field(default=None, gt=0)
    bucket_size: Whole = Field(default=2048, gt=0)
    max_blocks: Whole | None = Field(default=None, gt=0)
    training_length: Whole | None = Field(default=None, gt=0)
    caption: str | None = None
    truncate_middle: Whole | None = Field(default=None, gt=1)  # prompt tokens kept (first and last half)
    length_buckets: LengthBuckets | None = None
    babilong: BabilongOptions = Field(default_factory=BabilongOptions)
    # LongBench scoring rules by name, and the one this suite scores with (`--longbench-rule` picks another)
    longbench_rules: dict[str, LongBenchRule] = {}
    longbench_rule: str | None = None
    # Whether the paper's rows were prompted through a chat template (base models: no), unless a task says
    paper_chat_template: bool = False
    _file: str | None = PrivateAttr(default=None)  # the path it was read from, as given; None: by name

    @property
    def command_name(self) -> str:
        """What `--suite` takes to load this suite again, for the commands an error suggests: the
        file it was read from (the suites folder knows no suite of a file's name), else its name."""
        return self._file or self.name

    def __eq__(self, other):
        """Equal as suites: where one was read from (`_file`) is no part of it, so a suite read from
        its file equals the copy a run stored (pydantic's own equality compares private attributes)."""
        if not isinstance(other, SuiteSpec):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__

    __hash__ = None  # mutable, as pydantic leaves it

    @model_validator(mode="before")
    @classmethod
    def _first_line_per_task(cls, value):
        """`first_line: true` on tasks (the form older run folders' suite.json hold) reads as one rule,
        `thudm`, cutting those tasks' predictions and rounding cells as THUDM's eval.py does."""
        if not isinstance(value, dict) or not any(isinstance(t, dict) and "first_line" in t
                                                  for t in value.get("tasks") or []):
            return value
        tasks = [dict(t) for t in value["tasks"]]
        cut = [t["name"] for t in tasks if t.pop("first_line", False)]
        return value | {"tasks": tasks, "longbench_rules": {"thudm": {"first_line": cut, "cell_decimals": 2}},
                        "longbench_rule": "thudm"}

    @model_validator(mode="after")
    def _rule_defined(self):
        if (self.longbench_rule is None) != (not self.longbench_rules):
            raise ValueError("longbench_rules and longbench_rule go together: name the rule the suite scores with")
        if self.longbench_rule is not None and self.longbench_rule not in self.longbench_rules:
            raise ValueError(f"longbench_rule {self.longbench_rule!r} is not one of longbench_rules "
                             f"({', '.join(self.longbench_rules)})")
        return self

    def scoring_rule(self) -> LongBenchRule:
        """The LongBench rule the suite scores with; without rules nothing is cut or rounded."""
        return self.longbench_rules[self.longbench_rule] if self.longbench_rule else LongBenchRule()

    def with_longbench_rule(self, name: str | None) -> "SuiteSpec":
        """This suite scoring with its LongBench rule `name` (None: its own), or one error line."""
        if name is None:
            return self
        if name not in self.longbench_rules:
            choices = ", ".join(self.longbench_rules)
            raise PathEvalError(f"suite {self.name} has no LongBench rule {name!r}: " + (
                f"choose one of {choices}" if choices else "it scores no LongBench task; drop --longbench-rule"))
        return self.model_copy(update={"longbench_rule": name})

    def select(self, entries: list[str]) -> list[TaskSpec]:
        """The tasks `--tasks` names: each entry a task's name or a shell-style pattern (`t5_*`), matched
        as a task's `models:` entries match models (fnmatch, case-sensitive); in the entries' order, each
        pattern's matches in the suite's, every task once. A name the suite lacks, or a pattern matching
        none of its tasks, is one error line listing them."""
        chosen: dict[str, TaskSpec] = {}
        for entry in entries:
            if not is_pattern(entry):
                chosen.setdefault(entry, self.task(entry))
                continue
            matches = [task for task in self.tasks if fnmatch.fnmatchcase(task.name, entry)]
            if not matches:
                raise PathEvalError(f"suite {self.name}: --tasks pattern {entry!r} matches none of its tasks "
                                    f"{', '.join(t.name for t in self.tasks)}")
            for task in matches:
                chosen.setdefault(task.name, task)
        return list(chosen.values())

    def task(self, name: str) -> TaskSpec:
        for task in self.tasks:
            if task.name == name:
                return task
        raise PathEvalError(f"suite {self.name} has no task {name!r}: choose from its tasks "
                            f"{', '.join(t.name for t in self.tasks)}")


def is_pattern(entry: str) -> bool:
    """Whether a `--tasks` or `models:` entry is a shell-style pattern rather than a plain name."""
    return any(c in entry for c in "*?[")
