"""Per-position perplexity reports: exact, unique position columns in the Markdown table; each
model's own training length marked (its model card, else the suite's); one colour per model name in
every figure of a study; a (corpus, block length) of one position per model is named, not drawn."""
import json

import matplotlib.colors
from matplotlib.container import ErrorbarContainer

from path_eval.reports.extrapolation import by_position_figure, markdown, training_lengths, write_reports
from path_eval.reports.plots import suite_figures
from path_eval.results import Provenance, ResultRecord
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE, ROOT

EXTRAPOLATION = load_suite("extrapolation")  # training_length 4096: the paper's models


def record(model, length, value, bucket=None, model_path="/m", suite="extrapolation", task="code_standin",
           metric="perplexity"):
    return ResultRecord(suite=suite, model=model, task=task, length=length, bucket=bucket, metric=metric,
                        value=value, stderr=None, n=2, higher_is_better=metric != "perplexity",
                        provenance=Provenance(**(PROVENANCE | {"model_path": str(model_path)})))


def curve(model, model_path="/m", length=2048, size=512):
    """A model's overall record and its per-position buckets of `size` in blocks of `length`."""
    buckets = [[start, min(start + size - 1, length - 2)] for start in range(0, length - 1, size)]
    return [record(model, length, 10.0, model_path=model_path)] + [
        record(model, length, 10.0 + i, bucket, model_path) for i, bucket in enumerate(buckets)]


def test_markdown_columns_are_the_exact_positions():
    table = markdown(curve("rope", length=2048, size=1024), EXTRAPOLATION)
    assert "| model | 0-1023 | 1024-2046 | all |" in table.splitlines()


def test_each_model_is_marked_at_its_own_training_length(tmp_path):
    """The zoo's card says 1024; a card of 512 in another folder; no card: the suite's 4096."""
    small = tmp_path / "small"
    small.mkdir()
    (small / "model_card.json").write_text(json.dumps({"training_length": 512}))
    zoo_card = json.loads((ROOT / "path_eval" / "zoo" / "models" / "rope" / "model_card.json").read_text())
    records = curve("rope", ROOT / "path_eval" / "zoo" / "models" / "rope") + curve("small", small) + \
        curve("paper", tmp_path / "no-card")
    assert training_lengths(records, EXTRAPOLATION) == {"rope": zoo_card["training_length"], "small": 512,
                                                        "paper": 4096}
    [ax] = by_position_figure(records, EXTRAPOLATION).axes
    curves = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert set(curves) == {"rope (trained at 1K)", "small (trained at 512)", "paper (trained at 4K)"}
    marks = {line.get_xdata()[0]: line.get_color() for line in ax.get_lines() if line.get_label().startswith("_")
             and len(set(line.get_xdata())) == 1}
    # models trained at different lengths: each mark in its model's colour
    colour = {label.split()[0]: line.get_color() for label, line in curves.items()}
    assert marks == {1024: colour["rope"], 512: colour["small"], 4096: colour["paper"]}


def test_a_shared_training_length_is_one_neutral_mark():
    [ax] = by_position_figure(curve("a") + curve("b"), EXTRAPOLATION).axes
    marks = {(line.get_xdata()[0], line.get_color()) for line in ax.get_lines() if line.get_label().startswith("_")
             and len(set(line.get_xdata())) == 1}
    assert marks == {(4096, "black")}


def test_a_single_position_panel_is_named_not_drawn(tmp_path):
    records = curve("rope", length=1024, size=1024) + curve("rope", length=2048, size=1024)
    figure = by_position_figure(records, EXTRAPOLATION)
    assert [ax.get_title() for ax in figure.axes] == ["Python stdlib (stand-in for CodeParrot)\n"
                                                      "(blocks of 2048 tokens)"]
    assert "Not drawn, one position each" in figure.get_supxlabel()
    assert "in blocks of 1024 tokens" in figure.get_supxlabel()
    only_one = curve("rope", length=1024, size=1024)
    assert by_position_figure(only_one, EXTRAPOLATION) is None
    written = write_reports(only_one, EXTRAPOLATION, tmp_path)  # the tables still hold the numbers
    assert [p.name for p in written] == ["perplexity_by_position.csv", "perplexity_by_position.md"]


def test_a_model_has_one_colour_in_every_figure_of_a_study():
    """RULER has the models in one order, the per-position suite another and one model fewer: the
    colour follows the model's name, not its place in a figure."""
    ruler = load_suite("ruler")
    records = [record(m, n, 0.5, suite="ruler", task="niah_single_1", metric="string_match_all")
               for m in ("zeta", "alpha", "mid") for n in (4096, 8192)]
    records += curve("mid") + curve("zeta")
    figures = dict(suite_figures(records, {"ruler": ruler, "extrapolation": EXTRAPOLATION}))
    by_length = {c.get_label(): matplotlib.colors.to_hex(c.lines[0].get_color())
                 for c in figures["ruler"].axes[0].containers if isinstance(c, ErrorbarContainer)}
    by_position = {line.get_label(): matplotlib.colors.to_hex(line.get_color())
                   for line in figures["extrapolation_by_position"].axes[0].get_lines()
                   if not line.get_label().startswith("_")}
    assert by_position["mid (trained at 4K)"] == by_length["mid"]
    assert by_position["zeta (trained at 4K)"] == by_length["zeta"]
    assert len(set(by_length.values())) == 3


def test_no_label_overlaps_another():
    """The training length is named in the legend and the axis label, not by text on the axes; the
    tick labels, the axis label and the note under the figure (a caption, a panel left out) each
    keep their own room once drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    records = curve("rope", length=1024, size=1024) + curve("rope") + curve("path")
    figure = by_position_figure(records, EXTRAPOLATION.model_copy(update={"caption": "A caption " * 30}))
    FigureCanvasAgg(figure).draw()
    renderer = figure.canvas.get_renderer()
    [ax] = figure.axes
    assert len(ax.texts) == 0
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    [note] = [t for t in figure.texts if t.get_text() == figure.get_supxlabel()]
    boxes += [ax.xaxis.label.get_window_extent(renderer), note.get_window_extent(renderer)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def drawn(figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure).draw()
    return figure.canvas.get_renderer()


def test_axes_are_linear_with_plain_ticks_where_the_range_allows():
    """Positions 256 to 1.75K with the training length (4K) and perplexities 10 to 13 span little:
    linear axes, ticks a power of two apart; positions 512 to 60K span more than LOG_SPAN: a log x
    axis, its labels still plain (`1K`, not `2^10`; `20`, not `2x10^1`)."""
    from path_eval.reports.extrapolation import LOG_SPAN

    [ax] = by_position_figure(curve("rope") + curve("path"), EXTRAPOLATION).axes[:1]
    assert (ax.get_xscale(), ax.get_yscale()) == ("linear", "linear")
    drawn(ax.figure)
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ticks == ["0", "1K", "2K", "3K", "4K", "5K"]
    wide = curve("rope", length=65536, size=1024)
    assert max(r.bucket[1] for r in wide if r.bucket) > LOG_SPAN * 512
    [ax] = by_position_figure(wide, EXTRAPOLATION).axes[:1]
    assert ax.get_xscale() == "log"
    drawn(ax.figure)
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert labels and not any(mark in label for label in labels for mark in ("^", "times", "×", "$"))


def test_the_legend_sits_off_the_data():
    figure = by_position_figure(curve("rope") + curve("path"), EXTRAPOLATION)
    renderer = drawn(figure)
    [legend] = figure.legends
    assert not any(legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)) for ax in figure.axes)
