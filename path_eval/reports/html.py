"""One self-contained HTML page of a study: per suite its table in the suite's layout and its plots
(the SVG that `report --plot` writes, inline), then per run its protocol (the resolved plan) and each
model's provenance. No scripts, no external resources (styles inline, plots inline SVG), and
nothing in the page that changes between two renderings of the same runs."""
from __future__ import annotations

import html
import re
from pathlib import Path

from path_eval.atomic_files import write_atomic
from path_eval.reports.plots import StudyFigure
from path_eval.reports.stored import StoredRun
from path_eval.reports.tables import paper_layouts, suite_table
from path_eval.results.records import TASK_RESULT_FIELDS
from path_eval.suites import SuiteSpec
from path_eval.version import __version__

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th.text, td.text { text-align: left; }
thead th { background: #f2f2f2; }
caption { caption-side: bottom; text-align: left; font-size: 0.85em; color: #555; padding-top: 0.3em; }
figure { margin: 1em 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
code { font-size: 0.9em; }
td.text { max-width: 40em; overflow-wrap: anywhere; }
abbr { text-decoration: underline dotted; cursor: help; }
details { margin: 0.5em 0 1em; }
summary { cursor: pointer; font-size: 0.9em; }
"""
SHORT_HASH = 12  # hex digits of a sha256 shown in a table; the whole hash is the cell's hover text
SHA256 = re.compile(r"[0-9a-f]{64}")


def cell_text(value) -> str:
    """A cell's HTML: the text escaped, a sha256 shortened to SHORT_HASH digits with the whole hash
    on hover (64-digit hashes made the provenance table scroll for screens)."""
    text = str(value)
    if SHA256.fullmatch(text):
        return f'<abbr title="{text}">{text[:SHORT_HASH]}…</abbr>'
    return html.escape(text)


def table(header: list[str], rows: list[list[str]], title: str | None = None, note: str | None = None,
          text_columns: int = 1) -> str:
    """An HTML table; the first `text_columns` columns left-aligned text, the others numbers."""
    cell = lambda i, value: (f'<td class="text">{cell_text(value)}</td>' if i < text_columns  # noqa: E731
                             else f"<td>{cell_text(value)}</td>")
    parts = ["<table>"]
    if title:
        parts.append(f"<caption>{html.escape(title)}</caption>" if not note else
                     f"<caption>{html.escape(title)}: {html.escape(note)}</caption>")
    elif note:
        parts.append(f"<caption>{html.escape(note)}</caption>")
    parts.append("<thead><tr>" + "".join(f'<th class="text">{html.escape(h)}</th>' if i < text_columns else
                                         f"<th>{html.escape(h)}</th>" for i, h in enumerate(header)) + "</tr></thead>")
    parts.append("<tbody>" + "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>"
                                     for row in rows) + "</tbody>")
    parts.append("</table>")
    return "\n".join(parts)


def anchor(kind: str, name: str) -> str:
    return f"{kind}-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def suite_section(name: str, suite: SuiteSpec, runs: list[StoredRun], figures: dict[str, StudyFigure]) -> str:
    records = [r for run in runs for r in run.records if r.suite == name]
    plans = [run.plan for run in runs if run.plan and run.plan.suite.name == name]
    header, rows, note = suite_table(records, suite, plans, stderr=True)
    note = "; ".join(filter(None, ["± standard error", note]))
    parts = [f'<section id="{anchor("suite", name)}">',
             f"<h2>{html.escape(name)}: {html.escape(suite.description)}</h2>",
             table(header, rows, note=note, text_columns=2 if header[1:2] == ["task"] else 1)]
    for stem, what in ((name, figure_caption(suite)), (f"{name}_by_position", by_position_caption(suite))):
        if stem in figures:
            parts.append(f"<figure>{inline_svg(figures[stem])}<figcaption>{html.escape(what)} "
                         f"(<code>{html.escape(stem)}.svg</code> of <code>--plot</code>)</figcaption></figure>")
    parts.append("</section>")
    return "\n".join(parts)


def figure_caption(suite: SuiteSpec) -> str:
    """What a suite's figure by length shows (`plots.by_length_figure`)."""
    axis = f"length bucket ({suite.length_buckets.field})" if suite.length_buckets else "context length"
    return (f"{suite.name}: each task's headline metric (and the suite's first aggregate) against {axis}, one "
            "line per model; error bars ±1 standard error; fractions x100.")


def by_position_caption(suite: SuiteSpec) -> str:
    """What a suite's per-position figure shows (`extrapolation.by_position_figure`)."""
    return (f"{suite.name}: perplexity by token position, one panel per corpus and block length, one line per "
            "model; dashed: each model's training length." + (f" {suite.caption}" if suite.caption else ""))


def inline_svg(figure: StudyFigure) -> str:
    """The SVG element of `--plot`'s NAME.svg, without its XML prolog (inline SVG in HTML has none)."""
    return figure.svg[figure.svg.index("<svg"):]


def run_section(index: int, run: StoredRun) -> str:
    where = str(run.folder) if run.folder else "records without a run folder"
    parts = [f'<section id="run-{index}">', f"<h3>Run {index}: <code>{html.escape(where)}</code></h3>"]
    plan = run.plan
    if plan is None:
        parts.append("<p>No plan.json beside the results: the protocol is what the provenance below says.</p>")
    else:
        settings = [["suite", plan.suite.name], ["limit", plan.limit if plan.limit is not None else "none"],
                    ["seed", plan.seed], ["data_dir", str(plan.data_dir)]]
        parts.append(table(["setting", "value"], settings, title="protocol", text_columns=2))
        parts.append(table(["model", "path", "max_length"],
                           [[m.name, str(m.path), m.max_length or "-"] for m in plan.models],
                           title="models", text_columns=2))
        parts.append(table(["task", "kind", "length", "models", "seeds", "samples per seed"],
                           [[i.task, i.kind, "-" if i.length is None else i.length, ", ".join(i.models),
                             ", ".join(map(str, i.seeds)) or "-", "-" if i.samples is None else i.samples]
                            for i in plan.items], title="what ran", text_columns=4))
        if plan.skipped:
            parts.append(table(["task", "why"], [[s.task, s.reason] for s in plan.skipped], title="skipped",
                               text_columns=2))
    first = {}
    for record in run.records:
        first.setdefault(record.model, record.provenance)
    fields = [f for f in type(next(iter(first.values()))).model_fields if f not in TASK_RESULT_FIELDS] if first else []
    rows = [[field] + [str(getattr(p, field)) for p in first.values()] for field in fields]
    parts.append(f"<details><summary>provenance per model ({len(fields)} fields: versions, hashes, settings)"
                 "</summary>\n" + table(["provenance"] + list(first), rows, text_columns=1 + len(first))
                 + "\n</details>")
    parts.append("</section>")
    return "\n".join(parts)


def study_page(runs: list[StoredRun], suites: dict[str, SuiteSpec], figures: list[StudyFigure],
               layout: str | None = None, baseline: str | None = None) -> str:
    """The page's text: tables and plots per suite (and the paper `layout` table, if given, or the
    variants against `baseline` for layout "variants"), then each run's protocol and provenance."""
    records = [r for run in runs for r in run.records]
    by_name = {figure.name: figure for figure in figures}
    models = list(dict.fromkeys(r.model for r in records))
    title = (f"{', '.join(suites)}: " + ", ".join(models[:6]) + (f" and {len(models) - 6} more" if len(models) > 6
                                                                   else "") + " (path-eval)")
    nav = [f'<li><a href="#{anchor("suite", name)}">{html.escape(name)}</a></li>' for name in suites]
    nav += [f'<li><a href="#run-{i}">run {i}</a></li>' for i in range(1, len(runs) + 1)]
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>{len(runs)} run(s), {len(models)} model(s); made by path-eval "
            f"{html.escape(__version__)} (<code>eval.py report --html</code>). Values in the suite's units "
            "(fractions x100); the plots' error bars are +-1 standard error.</p>",
            "<nav><ul>" + "".join(nav) + "</ul></nav>"]
    if layout == "variants":
        from path_eval.reports.variants import left_out_line, variant_tables

        tables, left_out = variant_tables(runs, suites, baseline)
        body.append(f'<section id="layout"><h2>Variants against {html.escape(str(baseline))}</h2>'
                    + "".join(table(*t[1:3], title=t[0], note=t[3]) for t in tables)
                    + (f"<p>{html.escape(left_out_line(baseline, left_out))}</p>" if left_out else "") + "</section>")
    elif layout:
        body.append(f'<section id="layout"><h2>PaTH paper {html.escape(layout)} layout</h2>'
                    + "".join(table(header, rows, title=title, note=note)
                              for title, header, rows, note in paper_layouts(layout, records)) + "</section>")
    body += [suite_section(name, suite, runs, by_name) for name, suite in suites.items()]
    body.append("<h2>Runs: protocol and provenance</h2>")
    body += [run_section(i, run) for i, run in enumerate(runs, 1)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def write_page(runs: list[StoredRun], suites: dict[str, SuiteSpec], figures: list[StudyFigure], target: Path,
               layout: str | None = None, baseline: str | None = None) -> Path:
    write_atomic(study_page(runs, suites, figures, layout, baseline), Path(target))
    return Path(target)
