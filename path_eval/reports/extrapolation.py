"""Per-position perplexity reports: a CSV and a Markdown table of every bucket, and a PNG with one
panel per corpus and block length (x: token position; y: perplexity; linear where the values allow,
plain tick labels; one line per model, each model's own training length marked), captioned with the
suite's caption."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from path_eval import run_folder
from path_eval.atomic_files import write_atomic
from path_eval.reports.plots import model_colors, png_bytes
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec


def _rows(records: list[ResultRecord]) -> list[ResultRecord]:
    return sorted((r for r in records if r.bucket is not None), key=lambda r: (r.task, r.length, r.model, r.bucket))


def write_csv(records: list[ResultRecord], target: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["model", "corpus", "block_length", "first_position", "last_position", "perplexity", "stderr",
                     "blocks"])
    for r in _rows(records):
        writer.writerow([r.model, r.task, r.length, r.bucket[0], r.bucket[1], f"{r.value:.4f}",
                         "" if r.stderr is None else f"{r.stderr:.4f}", r.n])
    write_atomic(buffer.getvalue(), target)


def markdown(records: list[ResultRecord], suite: SuiteSpec) -> str:
    labels = {t.name: t.label or t.name for t in suite.tasks}
    parts = []
    for task, length in dict.fromkeys((r.task, r.length) for r in _rows(records)):
        mine = [r for r in _rows(records) if r.task == task and r.length == length]
        starts = list(dict.fromkeys(r.bucket[0] for r in mine))
        parts.append(f"**{labels.get(task, task)}**, blocks of {length} tokens "
                     f"({mine[0].n} block{'s' if mine[0].n != 1 else ''}); perplexity by position:\n")
        spans = {r.bucket[0]: f"{r.bucket[0]}-{r.bucket[1]}" for r in mine}  # exact positions, unique per bucket
        parts.append("| model | " + " | ".join(spans[s] for s in starts) + " | all |")
        parts.append("|---" * (len(starts) + 2) + "|")
        overall = {r.model: r.value for r in records if r.task == task and r.length == length and r.bucket is None}
        for model in dict.fromkeys(r.model for r in mine):
            values = {r.bucket[0]: r.value for r in mine if r.model == model}
            parts.append(f"| {model} | " + " | ".join(f"{values[s]:.2f}" for s in starts) +
                         f" | {overall.get(model, float('nan')):.2f} |")
        parts.append("")
    return "\n".join(parts)


def training_lengths(records: list[ResultRecord], suite: SuiteSpec) -> dict[str, int | None]:
    """Each model's training length: the `training_length` of the model card (model_card.json) in its
    checkpoint folder, as the zoo's have; else the suite's `training_length` (None: unknown). A
    config's `max_position_embeddings` is not read: it states what the model accepts (the zoo's say
    65536), not what it was trained at."""
    lengths = {}
    for r in records:
        if r.model not in lengths:
            card = Path(r.provenance.model_path) / "model_card.json"
            try:
                stated = json.loads(card.read_text()).get("training_length")
            except (OSError, ValueError, AttributeError):  # no card here (a run from elsewhere), or not a card
                stated = None
            lengths[r.model] = stated if isinstance(stated, int) and stated > 0 else suite.training_length
    return lengths


def position_label(tokens: float) -> str:
    return f"{tokens / 1024:g}K" if tokens >= 1024 else f"{tokens:g}"


LOG_SPAN = 16  # an axis whose largest value is more than this many times its smallest is drawn on a log scale


def plain_axes(ax, xs: list[float], ys: list[float]) -> None:
    """Linear axes where the values span less than LOG_SPAN (a reader's plot), else log (positions
    base 2, perplexity base 10); either way plain tick labels (`1.5K`, `30`), never `2.48x10^1`."""
    import matplotlib.ticker

    if max(xs) > LOG_SPAN * min(xs):
        ax.set_xscale("log", base=2)
    else:
        step = 2 ** max(0, round(math.log2((max(xs) - min(xs)) / 4 or 1)))  # ticks at 512, 768, 1K, ...
        ax.xaxis.set_major_locator(matplotlib.ticker.MultipleLocator(step))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: position_label(x)))
    if max(ys) > LOG_SPAN * min(ys):
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))


def by_position_figure(records: list[ResultRecord], suite: SuiteSpec, colors: dict[str, str] | None = None):
    """Perplexity by token position, one panel per (corpus, block length) whose models have two
    positions or more: a panel of one position (blocks no longer than a bucket) has no curve, and its
    values are in the Markdown table and CSV; a note under the figure names it. None without such a
    panel. `colors`: the study's `plots.model_colors`, else those of `records`. Each model's training
    length (`training_lengths`) is a dashed line, black where all models of the panel share it, else in
    the model's colour, and is named in the legend, which sits beside the panels, off the data. Axes
    as `plain_axes` draws them. Drawn without pyplot (no global backend is switched)."""
    from matplotlib.figure import Figure

    labels = {t.name: t.label or t.name for t in suite.tasks}
    rows = _rows(records)
    found = list(dict.fromkeys((r.task, r.length) for r in rows))
    points = {key: {r.bucket[0] for r in rows if (r.task, r.length) == key} for key in found}
    panels = [key for key in found if len(points[key]) > 1]
    if not panels:
        return None
    left_out = [f"{labels.get(task, task)} in blocks of {length} tokens" for task, length in found
                if (task, length) not in panels]
    colors = colors or model_colors(records)
    trained = training_lengths(rows, suite)
    fig = Figure(figsize=(4.4 * len(panels) + 2.2, 4.4), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)
    legend = {}
    for ax, (task, length) in zip(axes[0], panels):
        mine = [r for r in rows if r.task == task and r.length == length]
        models = list(dict.fromkeys(r.model for r in mine))
        for model in models:
            line = [r for r in mine if r.model == model]
            label = model if trained[model] is None else f"{model} (trained at {position_label(trained[model])})"
            legend[label], = ax.plot([(r.bucket[0] + r.bucket[1]) / 2 + 1 for r in line], [r.value for r in line],
                                     marker="o", markersize=3, color=colors[model], label=label)
        shared = len({trained[m] for m in models}) == 1
        for model in models:
            if trained[model] is not None:
                ax.axvline(trained[model], color="black" if shared else colors[model], linestyle="--", linewidth=1)
        xs = [(r.bucket[0] + r.bucket[1]) / 2 + 1 for r in mine] + [trained[m] for m in models if trained[m]]
        plain_axes(ax, xs, [r.value for r in mine])
        ax.set_xlabel("token position (dashed: training length)")
        ax.set_ylabel("perplexity")
        ax.set_title(f"{labels.get(task, task)}\n(blocks of {length} tokens)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    fig.legend(handles=list(legend.values()), loc="outside right upper", fontsize=8, frameon=False)
    notes = ([f"Not drawn, one position each (values in perplexity_by_position.md): {'; '.join(left_out)}."]
             if left_out else []) + ([suite.caption] if suite.caption else [])
    if notes:
        fig.supxlabel(" ".join(notes), fontsize=8, wrap=True)
    return fig


def write_reports(records: list[ResultRecord], suite: SuiteSpec, out: Path) -> list[Path]:
    if not any(r.bucket is not None for r in records):
        return []
    out.mkdir(parents=True, exist_ok=True)
    csv_file, md_file, png_file = (run_folder.by_position_file(out, fmt) for fmt in run_folder.BY_POSITION_FORMATS)
    write_csv(records, csv_file)
    write_atomic(markdown(records, suite), md_file)
    figure = by_position_figure(records, suite)
    if figure is None:  # every panel would be a single position: the tables hold it all
        return [csv_file, md_file]
    write_atomic(png_bytes(figure), png_file)
    return [csv_file, md_file, png_file]
