"""Plots of a study, one figure per long-context suite: each task's headline metric (its first) and
the suite's first aggregate present (RULER's 13-task mean, BABILong's qa1-qa5 mean, ...) against
context length, or against the suite's length buckets (LongBench-E), one panel each, one line per
model with error bars of +-1 standard error from the records and, for a task run under several
seeds (PhoneBook), the +-1 sd spread between seeds shaded. Tasks scored by position (corpora) get
the per-position figure of `extrapolation.py` instead.

Figures are drawn without pyplot (no global backend is switched, so a notebook's own plots are left
alone) and saved as PNG and SVG with fixed metadata and SVG ids, so the same records give the same
bytes; the SVG's ids carry the figure's name, so that several figures can sit inline in one page."""
from __future__ import annotations

import io
import math
import re
import textwrap
from functools import cached_property
from pathlib import Path

from path_eval.atomic_files import write_atomic
from path_eval.metrics.registry import shown_as_percent
from path_eval.reports.tables import display
from path_eval.reports.layout import column_of, suite_labels
from path_eval.results import ResultRecord
from path_eval.samples.logs import slug
from path_eval.suites import SuiteSpec

PANEL_COLUMNS = 4
SVG_HASH_SALT = "path-eval"  # matplotlib's SVG ids are hashes salted by this: fixed, not random per process
PNG_DPI = 110


def headline_series(records: list[ResultRecord], suite: SuiteSpec) -> list[tuple[str, str]]:
    """The (task, metric) panels: every task's first metric with records, in the suite's order, then
    the first of the suite's aggregates with records."""
    present = {(r.task, r.metric) for r in records}
    panels = []
    for task in suite.tasks:
        metric = next((m.name for m in task.metrics if (task.name, m.name) in present), None)
        if metric is not None:
            panels.append((task.name, metric))
    aggregate = next(((a.name, a.metric) for a in suite.aggregates if (a.name, a.metric) in present), None)
    return panels + ([aggregate] if aggregate else [])


def length_columns(records: list[ResultRecord], suite: SuiteSpec) -> list:
    """The x axis: the suite's length buckets in its order, else the context lengths, sorted."""
    found = {column_of(r) for r in records}
    if suite.length_buckets:
        return [label for label in suite.length_buckets.labels if label in found]
    return sorted(found)


def length_title(column) -> str:
    if isinstance(column, str):
        return column
    return f"{column // 1024}K" if column % 1024 == 0 else str(column)


def model_colors(records: list[ResultRecord]) -> dict[str, str]:
    """One colour per model name, the same in every panel and every figure of a study: the models of
    the records sorted by name, in turn through the palette; keyed in the order models appear (the
    legends' order)."""
    import matplotlib

    palette = matplotlib.colormaps["tab10"].colors
    ranks = {model: i for i, model in enumerate(sorted({r.model for r in records}))}
    return {model: matplotlib.colors.to_hex(palette[ranks[model] % len(palette)])
            for model in dict.fromkeys(r.model for r in records)}


def by_length_figure(records: list[ResultRecord], suite: SuiteSpec, colors: dict[str, str] | None = None):
    """The suite's metrics against length (None when it has no long-context records); `colors`: the
    study's `model_colors`, else those of `records`."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    colors = colors or model_colors(records)
    by_position = {r.task for r in records if r.bucket is not None}
    records = [r for r in records if r.bucket is None and column_of(r) is not None and r.task not in by_position]
    panels = headline_series(records, suite)
    if not panels:
        return None
    columns = length_columns(records, suite)
    present = {r.model for r in records}
    colors = {model: color for model, color in colors.items() if model in present}
    labels = suite_labels(suite)
    cells = {(r.model, r.task, r.metric, column_of(r)): r for r in records}
    nrows = math.ceil(len(panels) / PANEL_COLUMNS)
    ncols = math.ceil(len(panels) / nrows)  # rows filled evenly: 5 panels as 3 + 2, not 4 + 1 beside 3 blanks
    width = max(3.4 * ncols, 6.0)
    fig = Figure(figsize=(width, 2.6 * nrows + 1.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).flatten()
    seeded = False
    for ax, (task, metric) in zip(axes, panels):
        for model, color in colors.items():
            points = [(x, cells[model, task, metric, c]) for x, c in enumerate(columns)
                      if (model, task, metric, c) in cells]
            if not points:
                continue
            xs = [x for x, _ in points]
            ys = [display(metric, r.value) for _, r in points]
            errors = [0.0 if r.stderr is None else display(metric, r.stderr) for _, r in points]
            ax.errorbar(xs, ys, yerr=errors, color=color, marker="o", markersize=4, capsize=3, linewidth=1.4,
                        label=model)
            spread = [(x, y, display(metric, r.seed_std)) for (x, r), y in zip(points, ys) if r.seed_std is not None]
            if spread:
                seeded = True
                ax.fill_between([x for x, _, _ in spread], [y - s for _, y, s in spread],
                                [y + s for _, y, s in spread], color=color, alpha=0.15, linewidth=0)
        ax.set_title(labels.get(task, task), fontsize=9)
        ax.set_xticks(range(len(columns)), [length_title(c) for c in columns], fontsize=8)
        ax.set_xlim(-0.5, len(columns) - 0.5)
        ax.set_ylabel(f"{metric} (%)" if shown_as_percent(metric) else metric, fontsize=8)
        if shown_as_percent(metric):
            ax.set_ylim(-4, 104)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=color, marker="o", markersize=4, label=model) for model, color in colors.items()]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(f"{suite.name}: {suite.description}", int(width * 9)), fontsize=10)
    axis = f"length bucket ({suite.length_buckets.field})" if suite.length_buckets else "context length (tokens)"
    bars = "error bars: +-1 standard error" + ("; shaded: +-1 sd between seeds" if seeded else "")
    fig.supxlabel(textwrap.fill(f"{axis}; {bars}", int(width * 15)), fontsize=8)
    return fig


def suite_figures(records: list[ResultRecord], suites: dict[str, SuiteSpec]) -> list[tuple[str, object]]:
    """(name, figure) of every figure of the study: per suite, metrics by length (`SUITE`),
    per-position perplexity (`SUITE_by_position`) and the state-tracking diagnostics in Figure 2's
    layout (`SUITE_figure2`), where it has such records; a model has one colour in all of them."""
    from path_eval.reports.extrapolation import by_position_figure

    from path_eval.reports.state_tracking import state_tracking_figure

    figures = []
    colors = model_colors(records)
    for name, suite in suites.items():
        mine = [r for r in records if r.suite == name]
        diagnostics = state_tracking_figure(mine, {name: suite})
        if diagnostics is not None:  # models trained per task, depth and seed: their own figure, not by length
            figures.append((f"{name}_figure2", diagnostics))
            continue
        for stem, figure in ((name, by_length_figure(mine, suite, colors)),
                             (f"{name}_by_position", by_position_figure(mine, suite, colors))):
            if figure is not None:
                figures.append((stem, figure))
    return figures


def svg_text(figure, name: str) -> str:
    """The figure as SVG, its ids prefixed with `name` (unique when several figures share a page)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', buffer.getvalue())
    return re.sub(r'(url\(#|href="#)([^")]+)', rf"\1{prefix}-\2", text)


def png_bytes(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
    return buffer.getvalue()


class StudyFigure:
    """One figure of a study, drawn as SVG once: the SVG that `--plot` writes and the HTML page
    inlines. Its first drawing: a constrained layout can shift on a figure's second one."""

    def __init__(self, name: str, figure):
        self.name, self.figure = name, figure

    @cached_property
    def svg(self) -> str:
        return svg_text(self.figure, self.name)


def study_figures(records: list[ResultRecord], suites: dict[str, SuiteSpec]) -> list[StudyFigure]:
    return [StudyFigure(name, figure) for name, figure in suite_figures(records, suites)]


def write_figure(figure: StudyFigure, target: Path) -> list[Path]:
    """`target`.png and `target`.svg, each through a temporary file and a rename."""
    written = []
    for suffix, data in ((".svg", figure.svg), (".png", png_bytes(figure.figure))):  # the SVG drawn first
        file = target.with_name(target.name + suffix)
        write_atomic(data, file)
        written.append(file)
    return written


def write_plots(figures: list[StudyFigure], folder: Path) -> list[Path]:
    """Every figure of the study as FOLDER/NAME.png and FOLDER/NAME.svg."""
    return [file for figure in figures for file in write_figure(figure, Path(folder) / slug(figure.name))]
