"""Reading suites: a built-in one by name (suites/NAME.yaml, shipped in the package) or a YAML file by
path, with `extends:` (a variant of a built-in suite) and `include:` (other suites' tasks whole)
resolved, into a validated SuiteSpec (path_eval/suites/schema.py); every problem is one line."""
from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
from path_eval.metrics.registry import REGISTRY
from path_eval.package_data import builtin_suites
from path_eval.suites.schema import SuiteSpec


def available_suites() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in builtin_suites().iterdir() if p.name.endswith(".yaml"))


# What a suite file may be called: YAML, or JSON (which is YAML), as a run folder's suite.json.
SUITE_SUFFIXES = (".yaml", ".yml", ".json")


# A suite as written is small (the largest built-in holds a few hundred values); YAML's aliases can
# make a small file stand for a structure of billions (an alias bomb), which validating or quoting in
# an error would expand. Past these bounds a file is refused in one line.
MAX_SUITE_BYTES = 4 * 2**20
MAX_SUITE_VALUES = 100_000


def expanded_values(value, budget: int) -> int:
    """How many values `value` stands for with every alias expanded, counted up to `budget` (an alias
    bomb stops the count there rather than after 10**9)."""
    count, stack = 0, [value]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return count


def suite_yaml(path: Path):
    if path.stat().st_size > MAX_SUITE_BYTES:
        raise PathEvalError(f"{path} is larger than {MAX_SUITE_BYTES // 2**20} MiB, far more than a suite holds: give "
                            "a suite YAML file (suites/*.yaml are examples)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise PathEvalError(f"{path} is not valid YAML ({str(err).splitlines()[0]}): fix the file (suites/*.yaml "
                            "are examples)") from None
    except UnicodeDecodeError as err:
        raise PathEvalError(f"{path} is not a text file ({err.reason} at byte {err.start}): give a suite YAML file "
                            "(suites/*.yaml are examples)") from None
    except RecursionError:
        raise PathEvalError(f"{path} nests deeper than Python reads: fix the file (suites/*.yaml are "
                            "examples)") from None
    if expanded_values(raw, MAX_SUITE_VALUES) > MAX_SUITE_VALUES:
        raise PathEvalError(f"{path} stands for more than {MAX_SUITE_VALUES} values once its YAML aliases are "
                            "expanded (an alias bomb?): give the suite written out, without nested aliases")
    return raw


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
    if path.suffix not in SUITE_SUFFIXES and len(path.parts) > 1:
        raise PathEvalError(f"suite file {path} is not named .yaml, .yml or .json: give a suite name "
                            f"({', '.join(available_suites())}) or rename the file")
    if path.suffix not in SUITE_SUFFIXES:
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
        if aggregate.name in names:  # its records would be a second set of that task's
            raise PathEvalError(f"malformed suite {path}: aggregate {aggregate.name} is named like a task: give it a "
                                "name of its own")
        for index, ref in enumerate(aggregate.mean_of):
            if tuple(ref.split("/", 1)) not in known:
                raise PathEvalError(f"malformed suite {path}: aggregate {aggregate.name} refers to {ref!r}, "
                                    "which no task of the suite reports (use task/metric)")
            averaged = REGISTRY[ref.split("/", 1)[1]]
            if averaged.higher_is_better != REGISTRY[aggregate.metric].higher_is_better:
                raise PathEvalError(f"malformed suite {path}: aggregate {aggregate.name} averages {ref!r} (where "
                                    f"{'higher' if averaged.higher_is_better else 'lower'} is better) as "
                                    f"{aggregate.metric} (where it is not): give it a metric of the same direction")
            if ref in aggregate.mean_of[:index]:  # it would weigh twice in the mean
                raise PathEvalError(f"malformed suite {path}: aggregate {aggregate.name} names {ref!r} twice: give "
                                    "each result once")
    for task in suite.length_buckets.tasks if suite.length_buckets else []:
        if task not in names:
            raise PathEvalError(f"malformed suite {path}: length_buckets.tasks names {task!r}, which is no task of "
                                f"the suite: choose from {', '.join(names)}")
    if Path(name_or_path).suffix in SUITE_SUFFIXES:
        suite._file = str(name_or_path)
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
            if KINDS[task.kind].sampled:
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
