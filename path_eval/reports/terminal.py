"""The terminal table of a run: models as rows, the suite's columns (task metric [@ length]).
Accuracies are shown x100 as in the paper; perplexities as they are."""
from __future__ import annotations

from rich.table import Table

from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec

PERCENT_METRICS = {"acc", "acc_norm", "exact_match", "string_match_all", "string_match_part", "score",
                   "phonebook_exact_match"}


def format_value(record: ResultRecord) -> str:
    if record.metric in PERCENT_METRICS:
        text = f"{100 * record.value:.1f}"
        if record.seed_std is not None:  # several seeds: their spread, as the paper's PhoneBook
            return text + f" (sd {100 * record.seed_std:.1f} over {record.seeds} seeds)"
        return text + (f" ±{100 * record.stderr:.1f}" if record.stderr else "")
    return f"{record.value:.2f}"


def results_table(records: list[ResultRecord], suite: SuiteSpec | None = None) -> Table:
    """Overall values only; per-position buckets go to the extrapolation reports. Results without
    lengths: models as rows, task metrics as columns. Results at context lengths: one row per
    (model, task metric), lengths as columns."""
    records = [r for r in records if r.bucket is None]
    labels = {}
    if suite is not None:
        labels = {t.name: t.label or t.name for t in suite.tasks} | {a.name: a.label or a.name for a in suite.aggregates}
    table = Table(title=f"{suite.name}: {suite.description}" if suite else None)
    table.add_column("model")
    lengths = list(dict.fromkeys(r.length for r in records if r.length is not None))
    if lengths:
        table.add_column("task")
        for length in sorted(lengths):
            table.add_column(f"@{length}", justify="right")
        for model in dict.fromkeys(r.model for r in records):
            cells = {(r.task, r.metric, r.length): format_value(r) for r in records if r.model == model}
            for task, metric in dict.fromkeys((r.task, r.metric) for r in records if r.model == model):
                table.add_row(model, f"{labels.get(task, task)} {metric}",
                              *(cells.get((task, metric, n), "-") for n in sorted(lengths)))
            table.add_section()
        return table
    columns = list(dict.fromkeys((r.task, r.metric) for r in records))
    for task, metric in columns:
        table.add_column(f"{labels.get(task, task)} {metric}", justify="right")
    for model in dict.fromkeys(r.model for r in records):
        cells = {(r.task, r.metric): format_value(r) for r in records if r.model == model}
        table.add_row(model, *(cells.get(c, "-") for c in columns))
    return table
