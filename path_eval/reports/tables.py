"""Tables from stored results: the suite's layout (variants as rows, task metrics [@ length] as
columns) with the paper's published rows beside the measured ones where the setting matches, and
side-by-side comparisons with deltas. Rendered for the terminal (rich), Markdown, CSV or LaTeX."""
from __future__ import annotations

import csv
import io
import json
import re
from typing import TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from path_eval.errors import PathEvalError
from path_eval.metrics.registry import shown_as_percent
from path_eval.package_data import paper_tables
from path_eval.reports.paired import (BOOTSTRAP_RESAMPLES, RunSamples, SampleScores, delta_test,
                                      unreachable_sentence)
from path_eval.reports.protocol import departures_note
from path_eval.reports.layout import column_of, column_title, row_model, rows_by_length, suite_labels
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec
from path_eval.terminal import printable

if TYPE_CHECKING:
    from path_eval.plan import ResolvedPlan


def display(metric: str, value: float) -> float:
    """Fractions as percentages (the paper's unit), as the registry says; everything else as stored."""
    return 100 * value if shown_as_percent(metric) else value


def paper_rows(suite: SuiteSpec, records: list[ResultRecord]) -> tuple[list[dict], str | None]:
    """The paper's rows for this suite, or none and the reason the setting does not match."""
    file = paper_tables() / f"{suite.name}.json"
    if not file.is_file():
        return [], None
    paper = json.loads(file.read_text())
    for field, wanted in paper.get("protocol", {}).items():
        found = {getattr(r.provenance, field) for r in records}
        if found != {wanted}:
            return [], f"paper rows left out: the runs used {field}={sorted(map(str, found))}, the paper {wanted}"
    return paper["rows"], None


def suite_table(records: list[ResultRecord], suite: SuiteSpec, plans: list[ResolvedPlan] = (),
                stderr: bool = False) -> tuple[list[str], list[list[str]], str | None]:
    """Header and rows in the suite's layout: measured models first, then the paper's rows; the note
    names the settings of the runs' `plans` that differ from the suite's protocol. `stderr`: each
    measured value with "± its standard error" (the HTML page's table, which has the room)."""
    departed = departures_note(list(plans)) if plans else None
    header, rows, note = _suite_rows(records, suite, stderr)
    return header, rows, "; ".join(filter(None, [note, departed])) or None


def suite_report(records: list[ResultRecord], suite: SuiteSpec, plans: list[ResolvedPlan] = (), fmt: str = "terminal"):
    """The suite's table rendered in `fmt` (`render`), titled by the suite: what `report` shows and
    `run` and `rescore` print, cell for cell."""
    header, rows, note = suite_table(records, suite, plans)
    return render(header, rows, fmt, f"{suite.name}: {suite.description}", note)


def _suite_rows(records: list[ResultRecord], suite: SuiteSpec,
                stderr: bool = False) -> tuple[list[str], list[list[str]], str | None]:
    records = [r for r in records if r.bucket is None]
    labels = suite_labels(suite)
    lengths, by_length = rows_by_length(records, suite)
    if lengths:  # long-context suites: a row per (model, task metric), lengths (or buckets) as columns
        header = ["model", "task"] + [column_title(n) for n in lengths]
        rows = [[model, f"{labels.get(task, task)} {metric}"] + [value_cell(cells.get(n), stderr) for n in lengths]
                for model, task, metric, cells in by_length]
        return header, rows, None
    columns = list(dict.fromkeys((r.task, r.metric, r.length) for r in records))
    header = ["model"] + [f"{labels.get(t, t)} {m}" + (f" @{n}" if n else "") for t, m, n in columns]
    rows = []
    for model in dict.fromkeys(row_model(r) for r in records):
        cells = {(r.task, r.metric, r.length): r for r in records if row_model(r) == model}
        rows.append([model] + [value_cell(cells.get(c), stderr) for c in columns])
    published, note = paper_rows(suite, records)
    for row in published:
        rows.append([row["model"]] + [_number(row.get(f"{t}/{m}")) for t, m, _ in columns])
    return header, rows, note


STUDY_LAYOUTS = ("variants", "state_tracking")  # layouts of a study's runs, not of a paper table


def paper_files() -> dict[str, dict]:
    """The paper's published tables (`results/paper/<name>.json`) by name."""
    return {p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted(paper_tables().iterdir(),
                                                                                    key=lambda p: p.name)
            if p.name.endswith(".json")}


def paper_layouts(name: str, records: list[ResultRecord]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, note) of each paper table the layout `name` rebuilds: the tables of a
    group (`table_group`: "conversion" is Tables 4 and 5), else the one table `name`."""
    group = [paper for paper in paper_files().values() if paper.get("table_group") == name]
    if group:
        shown = tables_of_models(group, records)
        return [(f"PaTH paper {paper['title']}", *models_by_column(paper, records, shown[i]))
                for i, paper in enumerate(group)]
    return [(f"PaTH paper {name} layout", *paper_layout(name, records))]


def tables_of_models(group: list[dict], records: list[ResultRecord]) -> list[set[str]]:
    """The models each table of a group shows: those with a record of a column only that table has
    (Table 4's code rows for a SmolLM2 checkpoint; GSM8K, in both tables, places no model); a model
    with records of shared columns only, in every table holding one."""
    tasks = [{c.get("task") for c in paper["columns"]} - {None} for paper in group]
    held = {}
    for record in records:
        if record.suite in group[0]["suites"]:
            held.setdefault(row_model(record), set()).add(record.task)
    shown = [set() for _ in group]
    for model, found in held.items():
        own = [i for i, mine in enumerate(tasks) if found & (mine - set().union(*tasks[:i], *tasks[i + 1:]))]
        for i in own or [i for i, mine in enumerate(tasks) if found & mine]:
            shown[i].add(model)
    return shown


def paper_layout(name: str, records: list[ResultRecord]) -> tuple[list[str], list[list[str]], str]:
    """A table of the paper rebuilt from results, measured beside published: `results/paper/<name>.json`
    with a `columns` map (Table 3: columns from several suites), `layout: datasets_by_bucket`
    (Table 7) or `layout: models_by_column` (Tables 4 and 5)."""
    papers = paper_files()
    paper = papers.get(name, {})
    records = [r for r in records if r.bucket is None]
    if paper.get("layout") == "datasets_by_bucket":
        return datasets_by_bucket(paper, records)
    if paper.get("layout") == "models_by_column":
        return models_by_column(paper, records)
    if "columns" not in paper:
        layouts = [table for table, found in papers.items() if {"columns", "layout"} & set(found)
                   and "table_group" not in found]
        groups = list(dict.fromkeys(found["table_group"] for found in papers.values() if "table_group" in found))
        raise PathEvalError(f"no layout {name!r}: choose one of {', '.join(layouts + groups + list(STUDY_LAYOUTS))}")
    return suite_columns(paper, records)


def models_by_column(paper: dict, records: list[ResultRecord],
                     models: set[str] | None = None) -> tuple[list[str], list[list[str]], str]:
    """Tables 4 and 5's shape: models as rows, the paper's columns (each a task metric of the suite, or
    one the suite does not reproduce, shown "-"); the measured models that hold a record of any column
    (of those in `models`, where given) first, then the published rows, marked "(paper)". The note says what the paper leaves unsaid and
    what the suite chose, which columns are not reproduced and why, and where the runs' protocol
    differs from the paper's."""
    columns = paper["columns"]
    records = [r for r in records if r.bucket is None and r.suite in paper["suites"]]
    cells: dict[tuple[str, str], ResultRecord] = {}
    for record in records:
        for column in columns:
            if (record.task, record.metric) == (column.get("task"), column.get("metric")):
                cells.setdefault((row_model(record), column["label"]), record)
    measured = [model for model in dict.fromkeys(model for model, _ in cells) if models is None or model in models]
    rows = [[model] + [value_cell(cells.get((model, c["label"]))) for c in columns] for model in measured]
    rows += [[row["model"]] + [_number(row.get(c["key"])) for c in columns] for row in paper["rows"]]
    missing = [f"{c['label']} ({c['not_reproduced']})" for c in columns if c.get("not_reproduced")]
    note = "; ".join(filter(None, [
        paper["source"], f"measured here: {', '.join(measured) or 'none'}", paper.get("note"),
        f"the paper leaves unsaid: {paper['unsaid']}; the suite's choice: {paper['suite_choice']}",
        f"not reproduced: {'; '.join(missing)}" if missing else None]))
    return ["model"] + [c["label"] for c in columns], rows, note + "".join(
        f"; CAUTION: {caution}" for caution in protocol_cautions(paper.get("protocol", {}), records))


def suite_columns(paper: dict, records: list[ResultRecord]) -> tuple[list[str], list[list[str]], str]:
    """Table 3's shape: variants as rows, a column group per suite and its lengths (or buckets);
    measured models first, then the published rows. A column group takes its records from any of its
    `suites` (its own suite, or the table3 suite holding them all); one without results here shows
    "-"; the note says which groups are measured and where the protocol differs, the paper's and
    each group's own (LongBench-E's scoring rule)."""
    columns = [(c, n) for c in paper["columns"] for n in c["lengths"]]
    header = ["model"] + [f"{c['group']} {n}" for c, n in columns]
    of_group = {c["group"]: [r for r in records if r.suite in c["suites"] and r.task == c["task"]
                             and r.metric == c["metric"]] for c in paper["columns"]}
    rows = []
    for model in dict.fromkeys(row_model(r) for r in records):
        cells = {(c["group"], str(column_of(r))): r for c in paper["columns"] for r in of_group[c["group"]]
                 if row_model(r) == model}
        rows.append([model] + [value_cell(cells.get((c["group"], n))) for c, n in columns])
    for row in paper["rows"]:
        rows.append([row["model"]] + [_number(row.get(c["key"], {}).get(n)) for c, n in columns])
    measured = [c["group"] for c in paper["columns"] if of_group[c["group"]]]
    note = _paper_note(paper, f"measured here: {', '.join(measured) or 'none'}", records)
    for c in paper["columns"]:
        note += "".join(f"; CAUTION ({c['group']}): {caution}"
                        for caution in protocol_cautions(c.get("protocol", {}), of_group[c["group"]]))
    return header, rows, note


def datasets_by_bucket(paper: dict, records: list[ResultRecord]) -> tuple[list[str], list[list[str]], str]:
    """Table 7's shape: a row per dataset, then the Average (the suite's aggregate), then measured
    datasets the paper leaves out; a column group per length bucket holding the paper's variants, then
    the measured models."""
    records = [r for r in records if r.suite in paper["suites"] and r.length_bucket is not None]
    models = list(dict.fromkeys(r.model for r in records))
    published = [f"{paper['variant_labels'][v]} (paper)" for v in paper["variants"]]
    header = ["dataset"] + [f"{bucket} {name}" for bucket in paper["buckets"] for name in published + models]
    cells = {(r.model, r.task, r.length_bucket): r for r in records}
    extra = [t for t in dict.fromkeys(r.task for r in records)
             if t not in paper["rows"] and t != paper["average_task"]]
    rows = []
    for dataset in list(paper["rows"]) + extra:
        task = paper["average_task"] if dataset == "Average" else dataset
        row = [dataset]
        for bucket in paper["buckets"]:
            row += [_number(v) for v in paper["rows"].get(dataset, {}).get(bucket, [None] * len(published))]
            row += [value_cell(cells.get((model, task, bucket))) for model in models]
        rows.append(row)
    return header, rows, _paper_note(paper, f"measured here: {', '.join(models) or 'none'}", records)


def _paper_note(paper: dict, measured: str, records: list[ResultRecord]) -> str:
    """Source, what was measured, the paper's own caveat, and a caution per protocol setting that
    differs from the paper's."""
    note = "; ".join(filter(None, [paper["source"], measured, paper.get("note")]))
    return note + "".join(f"; CAUTION: {caution}" for caution in protocol_cautions(paper.get("protocol", {}), records))


def protocol_cautions(protocol: dict, records: list[ResultRecord]) -> list[str]:
    """A line per protocol setting of the paper's that the records' provenance differs from."""
    cautions = []
    for field, wanted in protocol.items():
        found = {getattr(r.provenance, field) for r in records}
        if found and found != {wanted}:
            cautions.append(f"the runs used {field}={sorted(map(str, found))}, the paper {wanted}")
    return cautions


def _number(value) -> str:
    return "-" if value is None else f"{value:.2f}" if value >= 100 or value != round(value, 1) else f"{value:.1f}"


def value_cell(record: ResultRecord | None, stderr: bool = False) -> str:
    """The value in the tables' units (fractions x100, one decimal; others two), with "± stderr"
    where `stderr` and the record has one; "-" for no record."""
    if record is None:
        return "-"
    digits = 1 if shown_as_percent(record.metric) else 2
    text = f"{display(record.metric, record.value):.{digits}f}"
    if not stderr or record.stderr is None:
        return text
    return f"{text} ± {display(record.metric, record.stderr):.{digits}f}"


def comparison(runs: list[tuple[str, list[ResultRecord]]],
               samples: list[RunSamples | None] | None = None) -> tuple[list[str], list[list[str]]]:
    """Runs side by side, each (task, metric, length or length bucket) of each model; deltas against
    the first run's value of the same model, each beside its test (`paired.delta_test` on the runs'
    per-sample logs, `samples`, one per run: McNemar exact or a paired bootstrap where both hold the
    same samples, else unpaired z), marked * where p < 0.05.

    Runs are paired by model: a row per model holds that model's value in each run (a run without it
    shows "-"). Where every run holds one model only, those are compared whatever their names (a
    checkpoint against another) and the columns name them (`run:model`); a single run's models are
    compared against its first model the same way. The table is long, not wide: its columns are the
    runs, so two runs of a whole zoo fit a terminal."""
    logs = samples or [None] * len(runs)
    if len(runs) == 1:  # one run: its models are the sides
        [(_, recs)] = runs
        sides = [(model, [r for r in recs if row_model(r) == model], logs[0])
                 for model in dict.fromkeys(row_model(r) for r in recs)]
    else:
        sides = [(label, recs, log) for label, (_, recs), log in zip(_distinct(label for label, _ in runs), runs, logs)]
    models = [list(dict.fromkeys(row_model(r) for r in recs)) for _, recs, _ in sides]
    by_model = len(runs) > 1 and any(len(names) > 1 for names in models)
    if not by_model:  # one model a side: its name in the column's
        sides = [(f"{label}:{names[0]}" if len(runs) > 1 and names else label, recs, log)
                 for (label, recs, log), names in zip(sides, models)]
    groups = list(dict.fromkeys(m for names in models for m in names)) if by_model else [None]
    header = (["model"] if by_model else []) + ["task", "metric", "length"] + [label for label, _, _ in sides]
    for label, _, _ in sides[1:]:  # of two sides, the caption says which the delta is
        header += ["delta", "test"] if len(sides) == 2 else [f"delta {label}", f"test {label}"]
    rows = []
    for model in groups:
        mine = [[r for r in recs if r.bucket is None and (model is None or row_model(r) == model)]
                for _, recs, _ in sides]
        for task, metric, column in dict.fromkeys((r.task, r.metric, column_of(r)) for recs in mine for r in recs):
            found = [next((r for r in recs if (r.task, r.metric, column_of(r)) == (task, metric, column)), None)
                     for recs in mine]
            row = ([model] if by_model else []) + [task, metric, "" if column is None else str(column)]  # 0: BABILong 0k
            row += [value_cell(r) for r in found]
            base = found[0]
            base_scores = logs_scores(sides[0][2], base)
            for other, (_, _, log) in zip(found[1:], sides[1:]):
                if base is None or other is None:
                    row += ["-", "-"]
                    continue
                test = delta_test(base, base_scores, other, logs_scores(log, other))
                delta = display(metric, other.value) - display(metric, base.value)
                row += [f"{delta:+.2f}{' *' if test.significant else ''}", test.cell()]
            rows.append(row)
    return header, rows


def _distinct(labels) -> list[str]:
    """Run labels (folder names), numbered where two runs share one (runs/a/first, runs/b/first)."""
    labels = list(labels)
    return [f"{label} ({i + 1})" if labels.count(label) > 1 else label for i, label in enumerate(labels)]


def comparison_report(runs: list[tuple[str, list[ResultRecord]]], samples: list[RunSamples | None], fmt: str):
    """`compare`'s table rendered in `fmt` with its note. On the terminal a row's task and metric
    share a cell, one above the other, so two runs of a whole zoo fit 100 columns."""
    header, rows = comparison(runs, samples)
    note = "; ".join([comparison_note(rows, runs), *(f"CAUTION: {d}" for d in protocol_differences(runs))])
    if fmt == "terminal":
        task = header.index("task")
        header = header[:task] + ["task\nmetric"] + header[task + 2:]
        rows = [row[:task] + [f"{row[task]}\n{row[task + 1]}"] + row[task + 2:] for row in rows]
    return render(header, rows, fmt, "comparison", note, prose=tuple(h for h in header if h.startswith("test")))


def logs_scores(log: RunSamples | None, record: ResultRecord | None) -> SampleScores | str:
    if record is None or log is None:
        return "no per-sample log"
    return log.scores(record)


UNREACHABLE = re.compile(r"\(\d+ samples: p >= ([\d.e-]+)\)$")  # `paired.delta_test`'s note of a weak McNemar


def comparison_note(rows: list[list[str]], runs: list[tuple[str, list[ResultRecord]]] = ()) -> str:
    """What the marks and tests of `comparison` mean, a caution where samples differ, and the models
    of `runs` that only some runs hold (their rows have no delta)."""
    note = ("delta: each run's value minus the first run's, the same model's; * p < 0.05 by the test beside it: "
            "McNemar exact (0/1 scores of the same samples), paired bootstrap "
            f"({BOOTSTRAP_RESAMPLES:,} resamples of the same samples), or unpaired z "
            "(the two standard errors) where the runs hold different samples or no per-sample logs")
    note += unreachable_sentence([float(found[1]) for row in rows for cell in row
                                  if (found := UNREACHABLE.search(cell))])
    differ = sum(cell.endswith("(samples differ)") for row in rows for cell in row)
    if differ:
        note += f"; CAUTION: {differ} deltas compare different samples: their tests are unpaired"
    held = [(label, set(map(row_model, recs))) for label, recs in runs]
    if len(held) > 1 and any(len(models) > 1 for _, models in held):
        for label, models in held:
            missing = sorted(set().union(*(m for _, m in held)) - models)
            if missing:
                note += f"; {label} holds no {', '.join(missing)}: no delta for them"
    return note


def protocol_differences(runs: list[tuple[str, list[ResultRecord]]]) -> list[str]:
    """Settings that differ between the records compared in one row (their deltas mix protocols);
    different tasks of one run have different data, which is no difference."""
    from path_eval.reports.check import PROTOCOL_FIELDS

    notes = []
    for field in PROTOCOL_FIELDS:
        by_row: dict[tuple, set[str]] = {}
        for _, recs in runs:
            for r in recs:
                by_row.setdefault((r.task, r.metric, column_of(r), str(r.bucket)), set()).add(
                    str(getattr(r.provenance, field)))
        values = sorted({v for found in by_row.values() if len(found) > 1 for v in found})
        if values:
            notes.append(f"{field} differs between runs ({', '.join(values)[:120]})")
    return notes


def _is_number(cell: str) -> bool:
    """A cell that reads as a number: "-", "", or one that starts with one ("61.2", "+2.00 *",
    "87.5 ± 8.5 *"), which a table aligns to the right."""
    first = cell.split(" ", 1)[0]
    try:
        float(first)
    except ValueError:
        return first in ("", "-")
    return True


def render(header: list[str], rows: list[list[str]], fmt: str, title: str = "", note: str | None = None,
           prose: tuple[str, ...] = ()):
    """A rich Table for fmt 'terminal' (with its note, a paragraph under it), else the text of a
    Markdown, CSV or LaTeX table."""
    if fmt == "terminal":
        # A narrow terminal wraps cells between words, folds a word longer than its column and cuts
        # nothing to "…"; the `prose` columns (a comparison's tests) give up their room first. The note
        # runs the terminal's width: as the table's caption it was wrapped to the table's, a column of
        # a few words a line under a one-column table.
        table = Table(title=title or None, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for i, name in enumerate(header):
            numbers = all(_is_number(row[i]) for row in rows)
            table.add_column(name, justify="right" if numbers and i else "left", overflow="fold",
                             ratio=1 if name in prose else None, no_wrap=bool(prose) and name not in prose)
        for row in rows:
            table.add_row(*row)
        return Group(table, Text(printable(note), style="dim"), Text("")) if note else table  # a Text skips the console's escaping
    if fmt == "markdown":
        lines = [f"**{title}**", ""] if title else []
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines + ([f"\n{note}"] if note else [])) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        csv.writer(buffer).writerows([header, *rows])
        return buffer.getvalue()
    if fmt == "latex":
        escape = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")  # noqa: E731
        lines = [r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
                 " & ".join(map(escape, header)) + r" \\", r"\midrule"]
        lines += [" & ".join(map(escape, row)) + r" \\" for row in rows]
        return "\n".join(lines + [r"\bottomrule", r"\end{tabular}"]) + "\n"
    raise ValueError(f"unknown format {fmt!r}")
