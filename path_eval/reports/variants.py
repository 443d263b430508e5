"""`report --layout variants --baseline NAME`: how each variant compares with one of them at each
length. One table per task metric (and aggregate) of each suite: the models as rows (the baseline
first, then the runs' order), the context lengths (or length buckets) as columns, each cell the
value (fractions x100) with its record's standard error, marked * where the model differs from the
baseline at p < 0.05 by the paired test of `paired.delta_test` on the same samples (McNemar exact
for 0/1 scores, else a paired bootstrap). A cell whose samples cannot be paired with the baseline's
(no per-sample log, other samples) is marked † and not tested; a cell where the model or the
baseline has no record is "-". The runs may be several folders of one study: each record is paired
through its own run's per-sample logs."""
from __future__ import annotations

import os

from path_eval.errors import PathEvalError
from path_eval.reports.paired import (BOOTSTRAP_RESAMPLES, FEW_SAMPLES, DeltaTest, RunSamples, delta_test,
                                      unreachable_note)
from path_eval.reports.stored import StoredRun
from path_eval.reports.tables import logs_scores, render, value_cell
from path_eval.reports.layout import column_of, column_title, row_model, rows_by_length, suite_labels
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec

SIGNIFICANT, UNPAIRED = "*", "†"


def mark(test: DeltaTest) -> str:
    if test.method == "unpaired z":
        return f" {UNPAIRED}"
    return f" {SIGNIFICANT}" if test.significant else ""


def variant_tables(runs: list[StoredRun], suites: dict[str, SuiteSpec],
                   baseline: str) -> tuple[list[tuple[str, list[str], list[list[str]], str]], list[str]]:
    """(title, header, rows, note) per suite and task metric that the baseline has records of, and
    the titles of those it has none of (left out), in the suite's order. A model's record at a cell
    comes from the first run holding one; a table's columns are the lengths (buckets) its records
    have."""
    located = [(r, run) for run in runs for r in run.records if r.bucket is None]
    models = run_order(runs)
    if baseline not in models:
        plain = {r.model: row_model(r) for r, _ in located}
        if baseline not in plain:
            raise PathEvalError(f"--baseline {baseline}: no such model in these runs: choose one of "
                                f"{', '.join(models)}")
        baseline = plain[baseline]
    models = [baseline] + [m for m in models if m != baseline]
    logs = {id(run): RunSamples(run.folder) if run.folder else None for run in runs}
    tables, left_out = [], []
    for name, suite in suites.items():
        records = [(r, run) for r, run in located if r.suite == name]
        labels = suite_labels(suite)
        order = list(labels)  # the suite's tasks, then its aggregates; others after them as found
        keys = dict.fromkeys((r.task, r.metric) for r, _ in records)
        for task, metric in sorted(keys, key=lambda k: order.index(k[0]) if k[0] in order else len(order)):
            title = f"{name}: {labels.get(task, task)} {metric}"
            mine = [(r, run) for r, run in records if (r.task, r.metric) == (task, metric)]
            columns = rows_by_length([r for r, _ in mine], suite)[0] or [None]
            cells: dict[tuple[str, object], tuple[ResultRecord, StoredRun]] = {}
            for r, run in mine:
                cells.setdefault((row_model(r), column_of(r)), (r, run))
            present = [m for m in models if any((m, c) in cells for c in columns)]
            base = baseline if baseline in present else counterpart(baseline, present)
            if base is None:
                left_out.append(title)
                continue
            rows, tests = [], []
            for model in [base] + [m for m in present if m != base]:
                row = [model]
                for column in columns:
                    first, other = cells.get((base, column)), cells.get((model, column))
                    if first is None or other is None:
                        row.append("-")
                    elif model == base:
                        row.append(value_cell(first[0], stderr=True))
                    else:
                        tests.append(against_baseline(first, other, logs))
                        row.append(value_cell(other[0], stderr=True) + mark(tests[-1]))
                rows.append(row)
            note = legend(base, tests) if base == baseline else \
                f"{base} stands for {baseline}, which has no record here; " + legend(base, tests)
            tables.append((title, ["model"] + [column_title(c) for c in columns], rows, note))
    return tables, left_out


def counterpart(baseline: str, models: list[str]) -> str | None:
    """The baseline's counterpart among a table's models where the baseline itself has none: the
    model named as the baseline after the prefix they all share (`flipflop_rope` for `rope` among the
    zoo's flip-flop models), else None (the table is left out, and the report says so)."""
    shared = os.path.commonprefix(models)
    prefix = shared[:shared.rfind("_") + 1]
    return prefix + baseline if prefix and prefix + baseline in models else None


def run_order(runs: list[StoredRun]) -> list[str]:
    """The models' row labels in the runs' order: each run's models in its plan's order (without a
    plan, in the order of its records)."""
    order = []
    for run in runs:
        planned = [m.name for m in run.plan.models] if run.plan else []
        found = dict.fromkeys((row_model(r), r.model) for r in run.records)
        order += sorted(found, key=lambda pair: planned.index(pair[1]) if pair[1] in planned else len(planned))
    return list(dict.fromkeys(label for label, _ in order))


def against_baseline(base: tuple[ResultRecord, StoredRun], other: tuple[ResultRecord, StoredRun],
                     logs: dict) -> DeltaTest:
    """The test of other - base, each record paired through its own run's per-sample logs."""
    (base_record, base_run), (record, run) = base, other
    return delta_test(base_record, logs_scores(logs[id(base_run)], base_record), record,
                      logs_scores(logs[id(run)], record))


def legend(baseline: str, tests: list[DeltaTest]) -> str:
    """What the marks mean and which tests the table's cells had."""
    paired = [t for t in tests if t.method != "unpaired z"]
    methods = sorted({t.method for t in paired})
    note = (f"baseline {baseline}: {SIGNIFICANT} p < 0.05 against it, paired on the same samples ("
            + ", ".join(f"{m}, {BOOTSTRAP_RESAMPLES:,} resamples" if m == "paired bootstrap" else m
                        for m in methods or ["McNemar exact or paired bootstrap"])
            + f"); ± standard error; - no record of the model or of {baseline}")
    few = sum(t.note is not None and t.note.startswith("only ") for t in paired)
    if few:
        note += f"; p rough in {few} bootstrap(s) of under {FEW_SAMPLES} samples"
    note += unreachable_note(paired)
    reasons = sorted({t.note for t in tests if t.method == "unpaired z"})
    if reasons:
        count = len(tests) - len(paired)
        note += f"; {UNPAIRED} not tested, {count} cell(s): {', '.join(reasons)}"
    return note


def variants_report(runs: list[StoredRun], suites: dict[str, SuiteSpec], baseline: str, fmt: str):
    """The tables rendered: a rich Group for fmt 'terminal', else text. A CSV names its table in its
    first header cell and a LaTeX table comes after its title and legend as comments, so that the
    tables of one file stay apart."""
    from rich.console import Group

    tables, left_out = variant_tables(runs, suites, baseline)
    rendered = [render([title if fmt == "csv" else header[0]] + header[1:], rows, fmt, title, note)
                for title, header, rows, note in tables]
    if fmt == "latex":
        rendered = [f"% {title}\n% {note}\n{text}" for (title, _, _, note), text in zip(tables, rendered)]
    if left_out and fmt in ("terminal", "markdown", "latex"):  # a CSV file stays tables only
        line = left_out_line(baseline, left_out)
        rendered.append(f"% {line}\n" if fmt == "latex" else line + ("\n" if fmt == "markdown" else ""))
    return Group(*rendered) if fmt == "terminal" else "\n".join(rendered)


def left_out_line(baseline: str, left_out: list[str]) -> str:
    return f"left out, no record of {baseline}: {'; '.join(left_out)}"
