"""The layout the report tables share (tables.py, variants.py, plots.py): a suite's display labels,
a record's row (its model) and column (its length or length bucket), and the rows of a long-context
suite by column."""
from __future__ import annotations

from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec


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
