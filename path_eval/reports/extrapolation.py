"""Per-position perplexity reports: a CSV and a Markdown table of every bucket, and a PNG with one
panel per corpus (x: token position, log scale, training length marked; y: perplexity; one line
per model), captioned with the paper's reading of its Figure 3."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from path_eval.atomic_files import write_atomic
from path_eval.reports.plots import png_bytes
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
    target.write_text(buffer.getvalue())


def markdown(records: list[ResultRecord], suite: SuiteSpec) -> str:
    labels = {t.name: t.label or t.name for t in suite.tasks}
    parts = []
    for task, length in dict.fromkeys((r.task, r.length) for r in _rows(records)):
        mine = [r for r in _rows(records) if r.task == task and r.length == length]
        starts = list(dict.fromkeys(r.bucket[0] for r in mine))
        parts.append(f"**{labels.get(task, task)}**, blocks of {length} tokens "
                     f"({mine[0].n} block{'s' if mine[0].n != 1 else ''}); perplexity by position:\n")
        parts.append("| model | " + " | ".join(f"{s // 1024}K" if s else "0" for s in starts) + " | all |")
        parts.append("|---" * (len(starts) + 2) + "|")
        overall = {r.model: r.value for r in records if r.task == task and r.length == length and r.bucket is None}
        for model in dict.fromkeys(r.model for r in mine):
            values = {r.bucket[0]: r.value for r in mine if r.model == model}
            parts.append(f"| {model} | " + " | ".join(f"{values[s]:.2f}" for s in starts) +
                         f" | {overall.get(model, float('nan')):.2f} |")
        parts.append("")
    return "\n".join(parts)


def by_position_figure(records: list[ResultRecord], suite: SuiteSpec):
    """Perplexity by token position, one panel per (corpus, block length); None without per-position
    records. Drawn without pyplot (no global backend is switched)."""
    import matplotlib.ticker
    from matplotlib.figure import Figure

    labels = {t.name: t.label or t.name for t in suite.tasks}
    panels = list(dict.fromkeys((r.task, r.length) for r in _rows(records)))
    if not panels:
        return None
    fig = Figure(figsize=(5.2 * len(panels), 4.4))
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, (task, length) in zip(axes[0], panels):
        mine = [r for r in _rows(records) if r.task == task and r.length == length]
        for model in dict.fromkeys(r.model for r in mine):
            points = [r for r in mine if r.model == model]
            ax.plot([(r.bucket[0] + r.bucket[1]) / 2 + 1 for r in points], [r.value for r in points],
                    marker="o", markersize=3, label=model)
        if suite.training_length:
            ax.axvline(suite.training_length, color="grey", linestyle="--", linewidth=1)
            ax.text(suite.training_length, ax.get_ylim()[0], "training length ", color="grey", va="bottom", ha="right",
                    fontsize=8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
            lambda x, _: f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"))
        ax.set_yscale("log")
        ax.set_xlabel("token position")
        ax.set_ylabel("perplexity")
        ax.set_title(f"{labels.get(task, task)}\n(blocks of {length} tokens)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if suite.caption:
        fig.text(0.5, 0.01, suite.caption, ha="center", va="bottom", fontsize=8, wrap=True)
    fig.tight_layout(rect=(0, 0.08 if suite.caption else 0, 1, 1))
    return fig


def write_reports(records: list[ResultRecord], suite: SuiteSpec, out: Path) -> list[Path]:
    if not any(r.bucket is not None for r in records):
        return []
    out.mkdir(parents=True, exist_ok=True)
    csv_file, md_file, png_file = out / "perplexity_by_position.csv", out / "perplexity_by_position.md", \
        out / "perplexity_by_position.png"
    write_csv(records, csv_file)
    md_file.write_text(markdown(records, suite))
    write_atomic(png_bytes(by_position_figure(records, suite)), png_file)
    return [csv_file, md_file, png_file]
