"""Suites are data: `suites/<name>.yaml`, validated here. A suite says which tasks, which metrics
of each, which context lengths, and how the table aggregates them."""
from __future__ import annotations

import bisect
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from path_eval.errors import PathEvalError
from path_eval.metrics.registry import REGISTRY
from path_eval.package_data import builtin_suites


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


# Context lengths as a suite writes them (4096, "4k"), as numbers of tokens.
Lengths = Annotated[list[int], BeforeValidator(lambda value: [parse_length(v) for v in value or []])]


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
    edges: list[int] = Field(min_length=1)
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
    cell_decimals: int | None = Field(default=None, ge=0)

    def cuts_first_line(self, task: str) -> bool:
        return self.first_line == "all" or task in self.first_line


class TaskSpec(BaseModel):
    """One task of a suite: an lm-eval task (`lm_eval_task`, which defines data, prompt and
    metric), a corpus scored for perplexity by token position (`corpus`), or samples we generate
    and freeze per length (`generator`: "ruler/<task>" or "phonebook"; `samples` per length and
    seed, `seeds` seeds from the run's seed on, `stop` sequences, `data` a generator reads).
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
    num_fewshot: int = 0
    label: str | None = None
    samples: int | None = Field(default=None, gt=0)
    seeds: int = Field(default=1, gt=0)
    stop: list[str] = []
    data: DataSpec | None = None
    optional: bool = False
    adapter: str | None = None
    prompt_edits: list[PromptEdit] = []
    lengths: Lengths = []
    models: list[str] = []

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(x is not None for x in (self.lm_eval_task, self.corpus, self.generator, self.flipflop)) != 1:
            raise ValueError("a task needs exactly one of lm_eval_task, corpus, generator and flipflop")
        if self.flipflop and any(m.name != "flipflop_error" for m in self.metrics):
            raise ValueError("a flipflop task reports the flipflop_error metric only")
        if self.prompt_edits and not self.adapter:
            raise ValueError("prompt_edits need a task adapter (adapter: ...)")
        if self.adapter and not (self.lm_eval_task and self.data):
            raise ValueError("an adapted task needs lm_eval_task and the data it reads (data: ...)")
        if self.data and self.data.hf_path is None and self.adapter != "babilong":
            raise ValueError("data needs hf_path (only BABILong's tasks leave it to the suite's babilong options)")
        return self

    @field_validator("metrics", mode="before")
    @classmethod
    def _names_to_specs(cls, value):
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
    samples: int = Field(default=500, gt=0)  # per generated task, length and seed, unless the task says
    max_length: int | None = None
    bucket_size: int = 2048
    max_blocks: int | None = None
    training_length: int | None = None
    caption: str | None = None
    truncate_middle: int | None = Field(default=None, gt=1)  # prompt tokens kept (first and last half)
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


def available_suites() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in builtin_suites().iterdir() if p.name.endswith(".yaml"))


def suite_yaml(path: Path):
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise PathEvalError(f"{path} is not valid YAML ({str(err).splitlines()[0]}): fix the file (suites/*.yaml "
                            "are examples)") from None


def extended(raw: dict, path: Path) -> dict:
    """`extends: NAME`: the built-in suite NAME with this file's top-level keys in place of its own (a
    variant of a suite, e.g. another data source, without a second copy of its tasks)."""
    base_name = raw["extends"]
    base = builtin_suites() / f"{base_name}.yaml"
    if not isinstance(base_name, str) or not base.is_file():
        raise PathEvalError(f"malformed suite {path}: extends {base_name!r}, which is not a built-in suite: choose one "
                            f"of {', '.join(available_suites())}")
    parent = suite_yaml(base)
    if "extends" in parent:
        raise PathEvalError(f"malformed suite {path}: {base_name} extends another suite itself: extend a suite that "
                            "does not")
    return parent | {key: value for key, value in raw.items() if key != "extends"}


def load_suite(name_or_path: str, seen: frozenset[Path] = frozenset()) -> SuiteSpec:
    """A suite by name (suites/NAME.yaml) or by path to a YAML file; one-line errors. `seen`: the
    suites including this one (an include cycle is an error)."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = builtin_suites() / f"{name_or_path}.yaml"
        if not path.is_file():
            raise PathEvalError(f"unknown suite {name_or_path!r}: choose one of {', '.join(available_suites())} "
                                "or give a path to a suite YAML file")
    elif not path.is_file():
        raise PathEvalError(f"suite file {path} does not exist: give a suite name ({', '.join(available_suites())}) "
                            "or the path of a suite YAML file")
    if path.resolve() in seen:
        raise PathEvalError(f"suite {path} includes itself (through include:): break the cycle")
    raw = suite_yaml(path)
    if isinstance(raw, dict) and "extends" in raw:
        raw = extended(raw, path)
    if isinstance(raw, dict) and "include" in raw:
        raw = with_included(raw, path, seen | {path.resolve()})
    try:
        suite = SuiteSpec.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise PathEvalError(f"malformed suite {path}: {where}: {first['msg']}: fix the file (suites/*.yaml are "
                            "examples)") from None
    names = [t.name for t in suite.tasks]
    if len(set(names)) != len(names):
        raise PathEvalError(f"malformed suite {path}: task names repeat: give each task its own name")
    if len({a.name for a in suite.aggregates}) != len(suite.aggregates):
        raise PathEvalError(f"malformed suite {path}: aggregate names repeat: give each aggregate its own name")
    known = {(t.name, m.name) for t in suite.tasks for m in t.metrics}
    for aggregate in suite.aggregates:
        for ref in aggregate.mean_of:
            if tuple(ref.split("/", 1)) not in known:
                raise PathEvalError(f"malformed suite {path}: aggregate {aggregate.name} refers to {ref!r}, "
                                    "which no task of the suite reports (use task/metric)")
    return suite


# Suite-level settings an including suite does not take over as they are: its tasks take the lengths and
# sample counts of the suite they come from; name, description, tasks and aggregates are merged or its own.
NOT_CARRIED = {"name", "description", "tasks", "aggregates", "lengths", "samples"}


def with_included(raw: dict, path: Path, seen: frozenset[Path]) -> dict:
    """A suite that includes others (`include: [ruler, ...]`, names or paths): their tasks, each with
    the lengths and sample count of the suite it comes from made its own, and their aggregates, then its
    own. Every other setting an included suite sets carries over unless the including suite sets it
    itself (length buckets stay with the included suite's tasks); two included suites setting one
    differently must be settled by the including suite."""
    raw = dict(raw)
    names = raw.pop("include") or []
    if not isinstance(names, list):
        raise PathEvalError(f"malformed suite {path}: include: give a list of suite names or paths")
    parts = [load_suite(str(name), seen) for name in names]
    tasks, aggregates = [], []
    for part in parts:
        for task in part.tasks:
            own = {"lengths": task.lengths or part.lengths}
            if task.generator or task.flipflop:
                own["samples"] = task.samples or part.samples
            tasks.append(task.model_dump(exclude_defaults=True) | own)
        aggregates += [a.model_dump(exclude_defaults=True) for a in part.aggregates]
    for setting in SuiteSpec.model_fields.keys() - NOT_CARRIED - raw.keys():
        values = {}
        for part in parts:
            if setting in part.model_fields_set:
                value = part.model_dump(include={setting})[setting]
                if setting == "length_buckets" and not value["tasks"]:
                    value["tasks"] = [t.name for t in part.tasks]
                values[repr(value)] = (part.name, value)
        if len(values) > 1:
            raise PathEvalError(f"malformed suite {path}: the suites it includes set {setting} differently "
                                f"({', '.join(f'{n}: {v}' for n, v in values.values())}): set {setting} in {path.name}")
        if values:
            raw[setting] = next(iter(values.values()))[1]
    raw["tasks"] = tasks + list(raw.get("tasks") or [])
    raw["aggregates"] = aggregates + list(raw.get("aggregates") or [])
    return raw
