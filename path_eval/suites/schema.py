"""The suite schema: the pydantic models a suite (`suites/<name>.yaml`, data, not code) is validated
into. A suite says which tasks, which metrics of each, which context lengths, and how the table
aggregates them; path_eval/suites/loader.py reads the files."""
from __future__ import annotations

import bisect
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, Strict, TypeAdapter,
                      ValidationError, field_validator, model_serializer, model_validator)

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
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


class CorpusSpec(BaseModel):
    """A text corpus for per-position perplexity: exactly one source.

    hf_path (+ hf_config, split, field, dedupe, max_docs): a Hugging Face dataset, read from the
    data dir; `field` may be dotted ("document.text"); `dedupe` drops rows whose (dotted) field
    repeats (NarrativeQA lists each story once per question). folder: *.txt files under the data
    dir (sorted by name), optionally without Project Gutenberg headers and footers. python_stdlib:
    the `.py` sources of the running Python's standard library (sorted by path), a code corpus
    present on every machine. package_file: a text file shipped inside the `path_eval` package (a
    path relative to it, e.g. the zoo's held-out text), read through importlib.resources, so an
    installed wheel needs no data dir. `standin_for` names the corpus an offline stand-in replaces."""

    model_config = ConfigDict(extra="forbid")
    hf_path: str | None = None
    hf_config: str | None = None
    split: str = "test"
    field: str = "text"
    dedupe: str | None = None
    max_docs: int | None = None
    folder: str | None = None
    strip_gutenberg: bool = False
    python_stdlib: bool = False
    package_file: str | None = None
    standin_for: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if sum([self.hf_path is not None, self.folder is not None, self.python_stdlib,
                self.package_file is not None]) != 1:
            raise ValueError("a corpus needs exactly one of hf_path, folder, python_stdlib, package_file")
        return self


class FlipFlopSpec(BaseModel):
    """Flip-flop sequences FFL(p_ignore) (path_eval/tasks/flipflop.py) at the task's lengths."""

    model_config = ConfigDict(extra="forbid")
    p_ignore: float = Field(ge=0.0, lt=1.0)


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
    """One task of a suite, of one kind (`kind`: the row of path_eval/kinds.py whose key it gives):
    an lm-eval task (`lm_eval_task`, which defines data, prompt and metric), a corpus scored for
    perplexity by token position (`corpus`), samples we generate and freeze per length
    (`generator`: "ruler/<task>" or "phonebook"; `samples` per length and seed, `seeds` seeds from
    the run's seed on, `stop` sequences, `data` a generator reads), or flip-flop sequences
    (`flipflop`, samples and seeds as a generator's).
    An lm-eval task may name an `adapter` (path_eval/tasks: "longbench", "babilong") that rewrites its
    config to the original benchmark's rules, with `prompt_edits` to its template and `data` rows
    other than its config's dataset (LongBench's first-line cut is the suite's `longbench_rule`).
    `optional`: a task whose input data is missing is skipped with a notice, not an error.
    `lengths`: the task's own context lengths, in place of the suite's. `models`: the models (their
    names in the run: folder names, e.g. the zoo's) the task runs on; empty: every model."""

    model_config = ConfigDict(extra="forbid")
    name: str
    lm_eval_task: str | None = None
    corpus: CorpusSpec | None = None
    generator: str | None = None
    flipflop: FlipFlopSpec | None = None
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
    lengths: Lengths = []
    models: list[str] = []

    # The options of the task's kind where TaskSpec declares no field for it (a kind registered in
    # path_eval/kinds.py with `options`), by the kind's key.
    _undeclared_kind: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _one_kind(cls, value, handler):
        """Exactly one kind's key (path_eval/kinds.py), with the metrics that kind allows; a kind
        TaskSpec declares no field for is validated by its own `options` type."""
        undeclared = {}
        if isinstance(value, dict):
            for name, kind in KINDS.items():
                if kind.key not in cls.model_fields and kind.key in value:
                    try:
                        undeclared[kind.key] = TypeAdapter(kind.options).validate_python(value[kind.key])
                    except ValidationError as err:
                        first = err.errors()[0]
                        where = ".".join(str(p) for p in (kind.key, *first["loc"]))
                        raise ValueError(f"{where}: {first['msg']}") from None
            value = {key: v for key, v in value.items() if key not in undeclared}
        task = handler(value)
        if undeclared:
            task._undeclared_kind = undeclared
        keys = [kind.key for kind in KINDS.values()]
        if sum(task.kind_options(kind.key) is not None for kind in KINDS.values()) != 1:
            raise ValueError(f"a task needs exactly one of {', '.join(keys[:-1])} and {keys[-1]}")
        options = {option for kind in KINDS.values() for option in kind.options_read()}
        unread = sorted(option for option in options - KINDS[task.kind].options_read()
                        if getattr(task, option) != cls.model_fields[option].get_default(call_default_factory=True))
        if unread:
            raise ValueError(f"a {task.kind} task does not read {', '.join(unread)}: remove "
                             f"{'it' if len(unread) == 1 else 'them'}")
        allowed = KINDS[task.kind].metrics
        if allowed is not None and any(m.name not in allowed for m in task.metrics):
            raise ValueError(f"a {task.kind} task reports the {', '.join(sorted(allowed))} metric"
                             f"{'s' if len(allowed) > 1 else ''} only")
        return task

    @model_validator(mode="after")
    def _adapted(self):
        if self.stop and self.lm_eval_task and not self.adapter:
            raise ValueError("an lm-eval task stops where its own config says; stop applies to adapted tasks "
                             "(adapter: ...): remove it")
        if self.prompt_edits and not self.adapter:
            raise ValueError("prompt_edits need a task adapter (adapter: ...)")
        if self.adapter and not (self.lm_eval_task and self.data):
            raise ValueError("an adapted task needs lm_eval_task and the data it reads (data: ...)")
        if self.data and self.data.hf_path is None and self.adapter != "babilong":
            raise ValueError("data needs hf_path (only BABILong's tasks leave it to the suite's babilong options)")
        return self

    @model_serializer(mode="wrap")
    def _undeclared_kind_by_key(self, handler, info):
        """A kind TaskSpec declares no field for is written under its key, as the suite gives it."""
        data = handler(self)
        for key, options in self._undeclared_kind.items():
            data[key] = options.model_dump(mode=info.mode) if isinstance(options, BaseModel) else options
        return data

    def kind_options(self, key: str):
        """What the task gives under a kind's key (None: not that kind)."""
        return getattr(self, key) if key in type(self).model_fields else self._undeclared_kind.get(key)

    @property
    def kind(self) -> str:
        """The name of the task's kind: the row of path_eval.kinds.KINDS whose key the task gives."""
        return next(name for name, kind in KINDS.items() if self.kind_options(kind.key) is not None)

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
    """A plain mean of other results, e.g. Table 2's Avg over six accuracies ("task/metric" each)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    metric: str
    mean_of: list[str] = Field(min_length=1)
    label: str | None = None

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

    def task(self, name: str) -> TaskSpec:
        for task in self.tasks:
            if task.name == name:
                return task
        raise PathEvalError(f"suite {self.name} has no task {name!r}: choose from its tasks "
                            f"{', '.join(t.name for t in self.tasks)}")
