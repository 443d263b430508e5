"""The terminal table of a run: models as rows, the suite's columns (task metric [@ length]).
Metrics the registry shows as percentages (accuracies, fractions) are shown x100 as in the paper;
the others (perplexities) as they are."""
from __future__ import annotations

from rich.table import Table

from path_eval.metrics.registry import shown_as_percent
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec


def format_value(record: ResultRecord) -> str:
    if shown_as_percent(record.metric):
        text = f"{100 * record.value:.1f}"
        if record.seed_std is not None:  # several seeds: their spread, as the paper's PhoneBook
            return text + f" (sd {100 * record.seed_std:.1f} over {record.seeds} seeds)"
        return text + (f" ±{100 * record.stderr:.1f}" if record.stderr else "")
    return f"{record.value:.2f}"


def suite_labels(suite: SuiteSpec | None) -> dict[str, str]:
    """Display names of the suite's tasks and aggregates."""
    if suite is None:
        return {}
    return {t.name: t.label or t.name for t in suite.tasks} | {a.name: a.label or a.name for a in suite.aggregates}


def row_model(record: ResultRecord) -> str:
    """The model's name as a row label, with the data source where the rows were made here
    ("m (regenerated)"), so such a record never shares a cell with one of the published rows."""
    return f"{record.model} ({record.data_source})" if record.data_source else record.model


def column_of(record: ResultRecord) -> int | str | None:
    """A long-context record's column: its length bucket (LongBench-E's "4-8k"), else its length."""
    return record.length_bucket if record.length_bucket is not None else record.length


def column_title(column: int | str | None) -> str:
    return "all" if column is None else f"@{column}" if isinstance(column, int) else column


def rows_by_length(records: list[ResultRecord],
                   suite: SuiteSpec | None = None) -> tuple[list, list[tuple[str, str, str, dict]]]:
    """The columns present and, per (model, task, metric) in order of appearance, its records by
    column: the layout of long-context suites. Columns are the lengths (sorted) or, for a suite with
    length buckets, "all" (None: every sample) then the buckets in the suite's order."""
    if any(r.length_bucket is not None for r in records):
        order = suite.length_buckets.labels if suite is not None and suite.length_buckets else []
        found = dict.fromkeys(r.length_bucket for r in records if r.length_bucket is not None)
        columns = [None] + sorted(found, key=lambda b: order.index(b) if b in order else len(order))
    else:
        columns = sorted({r.length for r in records if r.length is not None})
    rows: dict[tuple[str, str, str], dict] = {}
    for r in records:
        rows.setdefault((row_model(r), r.task, r.metric), {})[column_of(r)] = r
    models = list(dict.fromkeys(row_model(r) for r in records))  # a model's rows together, aggregates included
    ordered = sorted(rows.items(), key=lambda item: models.index(item[0][0]))
    return columns, [(model, task, metric, cells) for (model, task, metric), cells in ordered]


def results_table(records: list[ResultRecord], suite: SuiteSpec | None = None) -> Table:
    """Overall values only; per-position buckets go to the extrapolation reports. Results without
    lengths: models as rows, task metrics as columns. Results at context lengths or in length
    buckets: one row per (model, task metric), lengths (buckets) as columns."""
    records = [r for r in records if r.bucket is None]
    labels = suite_labels(suite)
    table = Table(title=f"{suite.name}: {suite.description}" if suite else None)
    table.add_column("model")
    lengths, rows = rows_by_length(records, suite)
    if lengths:
        table.add_column("task")
        for length in lengths:
            table.add_column(column_title(length), justify="right")
        for index, (model, task, metric, cells) in enumerate(rows):
            if index and rows[index - 1][0] != model:
                table.add_section()
            table.add_row(model, f"{labels.get(task, task)} {metric}",
                          *(format_value(cells[n]) if n in cells else "-" for n in lengths))
        return table
    columns = list(dict.fromkeys((r.task, r.metric) for r in records))
    for task, metric in columns:
        table.add_column(f"{labels.get(task, task)} {metric}", justify="right")
    for model in dict.fromkeys(row_model(r) for r in records):
        cells = {(r.task, r.metric): format_value(r) for r in records if row_model(r) == model}
        table.add_row(model, *(cells.get(c, "-") for c in columns))
    return table
