"""Names that become file names, checked before anything runs. A run folder holds files named after
the suite (the default `runs/SUITE-KEY`), its tasks (`samples/MODEL/LOG.jsonl`, `curves/`,
`lm_eval/MODEL/samples_TASK_DATE.jsonl`) and its models (`samples/MODEL/`, `resume/MODEL-KEY.db`,
`lm_eval/MODEL/`). A name the user chooses that would be a path (a separator, `..`, a control
character, a leading dot, nothing), or that a command line or Windows would take for something else
(a leading dash, a device name such as `nul`, a `:`), is refused in one line; a model's name
becomes its folder through `path_eval.samples.logs.slug`; and two names that would share a file
(`a+b` and `a_b`, or `A` and `a` on a filesystem that ignores case) are refused naming both, since
the second's file would silently replace the first's."""
from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Iterable

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
from path_eval.samples.logs import name_problem, slug

if TYPE_CHECKING:
    from path_eval.plan.models import ModelReference
    from path_eval.plan.resolve import PlannedItem
    from path_eval.suites import SuiteSpec


def shown(name: str) -> str:
    """`name` quoted on one line (control characters escaped), cut when long."""
    return repr(name) if len(name) <= 80 else repr(name[:77]) + "..."


def check_name(name: str, what: str, fix: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        raise PathEvalError(f"{what} {shown(name)} {problem}, and it becomes a file name: {fix}")


def check_suite_names(suite: SuiteSpec) -> None:
    """The suite's own name, its LongBench rule, its tasks' names and its length buckets' labels."""
    fix = "give it letters, digits, '-' and '_' (in a copy of the suite)"
    check_name(suite.name, "suite name", fix)
    if suite.longbench_rule is not None:
        check_name(suite.longbench_rule, "LongBench rule", fix)
    for task in suite.tasks:
        check_name(task.name, f"suite {suite.name}: task name", fix)
    for label in suite.length_buckets.labels if suite.length_buckets else []:
        check_name(label, f"suite {suite.name}: length bucket label", fix)


def file_identity(file: str) -> str:
    """What a file name is to the filesystems a run folder may be copied to: case ignored (macOS,
    Windows), canonically equivalent Unicode alike (macOS: `é` and `e` + U+0301), trailing dots and
    spaces dropped (Windows)."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", file).casefold()).rstrip(". ")


def check_distinct(files: Iterable[tuple[str, str]], what: str, fix: str) -> None:
    """(name, its file name) pairs: two names whose file names are one file somewhere are refused."""
    seen: dict[str, str] = {}
    for name, file in files:
        earlier = seen.setdefault(file_identity(file), name)
        if earlier != name:
            raise PathEvalError(f"{what} {shown(earlier)} and {shown(name)} would share the file name {shown(file)} "
                                "(names that differ only in case, in Unicode normalisation, in trailing dots or in "
                                f"characters a file name cannot hold): {fix}")


def check_model_names(models: list[ModelReference]) -> None:
    """Each model's folders (samples/, curves/, resume/, lm_eval/) are its own."""
    check_distinct(((model.name, slug(model.name)) for model in models), "models",
                   "give them display names that differ in letters or digits with NAME=")


def check_log_names(suite: SuiteSpec, items: list[PlannedItem], models: list[str]) -> None:
    """Every per-sample log a model's items write (and lm-eval's name of each, its samples file in
    lm_eval/) is a safe file name of its own."""
    fix = "rename one of the tasks (in a copy of the suite)"
    for model in models:
        logs, lm_eval_names = [], []
        for item in items:
            if model not in item.models:
                continue
            for name in KINDS[item.kind].log_names(item):
                check_name(name, f"suite {suite.name}: task {item.task}'s log name", fix)
                logs.append((item.task, name))
            lm_eval_names += [(item.task, name) for name in item.lm_eval_tasks]
        check_distinct(((f"{task} ({name})", name) for task, name in dict.fromkeys(logs)),
                       f"suite {suite.name}: the per-sample logs of tasks", fix)
        check_distinct(((f"{task} ({name})", name) for task, name in dict.fromkeys(lm_eval_names)),
                       f"suite {suite.name}: the lm-eval names of tasks", fix)
