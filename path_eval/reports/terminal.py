"""The terminal table of a run: models as rows, the suite's columns (task metric [@ length]).
Accuracies are shown x100 as in the paper; perplexities as they are."""
from __future__ import annotations

from rich.table import Table

from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec

PERCENT_METRICS = {"acc", "acc_norm", "exact_match", "string_match_all", "string_match_part", "score"}


def format_value(record: ResultRecord) -> str:
    if record.metric in PERCENT_METRICS:
        text = f"{100 * record.value:.1f}"
        return text + (f" ±{100 * record.stderr:.1f}" if record.stderr else "")
    return f"{record.value:.2f}"


def results_table(records: list[ResultRecord], suite: SuiteSpec | None = None) -> Table:
    """Overall values only; per-position buckets go to the extrapolation reports."""
    records = [r for r in records if r.bucket is None]
    labels = {}
    if suite is not None:
        labels = {t.name: t.label or t.name for t in suite.tasks} | {a.name: a.label or a.name for a in suite.aggregates}
    columns = list(dict.fromkeys((r.task, r.metric, r.length) for r in records))
    table = Table(title=f"{suite.name}: {suite.description}" if suite else None)
    table.add_column("model")
    for task, metric, length in columns:
        header = f"{labels.get(task, task)} {metric}" + (f" @{length}" if length else "")
        table.add_column(header, justify="right")
    for model in dict.fromkeys(r.model for r in records):
        cells = {(r.task, r.metric, r.length): format_value(r) for r in records if r.model == model}
        table.add_row(model, *(cells.get(c, "-") for c in columns))
    return table
