"""`report --plot`: per long-context suite one figure, a panel per task's headline metric and the
suite's first aggregate, one line per model with error bars from the records' stderr; PhoneBook's
seed spread shaded, LongBench-E by bucket, per-position perplexity as its own figure; stable bytes."""
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.container import ErrorbarContainer

from path_eval.reports.plots import study_figures, suite_figures, write_plots
from path_eval.results import Provenance, ResultRecord
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE

MODELS = ("rope", "path")


def record(suite, model, task, metric, value, length=None, stderr=0.05, **fields):
    return ResultRecord(suite=suite, model=model, task=task, length=length, metric=metric, value=value, stderr=stderr,
                        n=10, higher_is_better=metric != "perplexity", provenance=Provenance(**PROVENANCE), **fields)


def study_records():
    """Two models on RULER (two tasks, both aggregates with records), BABILong (0K-8K), PhoneBook
    (three seeds), LongBench-E (buckets), extrapolation (per position) and table2 (no lengths)."""
    out = []
    for i, model in enumerate(MODELS):
        for n in (4096, 8192):
            out += [record("ruler", model, "niah_single_1", "string_match_all", 0.9 - i / 10, n),
                    record("ruler", model, "vt", "string_match_all", 0.5, n),
                    record("ruler", model, "ruler_13", "score", 0.6, n),
                    record("ruler", model, "ruler_11", "score", 0.6, n)]
        out += [record("babilong", model, task, metric, 0.4, n) for n in (0, 4096, 8192)
                for task, metric in (("qa1", "babilong_accuracy"), ("qa1", "target_substring"), ("babilong", "score"))]
        out += [record("phonebook", model, "phonebook", "phonebook_exact_match", 0.3, n, seeds=3, seed_std=0.1)
                for n in (2048, 4096)]
        out += [record("longbench_e", model, "trec", "classification_score", 0.2, length_bucket=b)
                for b in ("8k+", "0-4k", "4-8k")] + [record("longbench_e", model, "trec", "classification_score", 0.2)]
        out += [record("extrapolation", model, "code_standin", "perplexity", 9.0, 4096)]
        out += [record("extrapolation", model, "code_standin", "perplexity", 8.0 + b, 4096,
                       bucket=[b * 2048, b * 2048 + 2047]) for b in (0, 1)]
        out += [record("table2", model, "piqa", "acc", 0.6)]
    return out


SUITES = {name: load_suite(name) for name in ("ruler", "babilong", "phonebook", "longbench_e", "extrapolation",
                                              "table2")}


@pytest.fixture(scope="module")
def figures():
    return dict(suite_figures(study_records(), SUITES))


def panels(figure):
    return [ax for ax in figure.axes if ax.get_visible()]


def test_each_long_context_suite_has_its_figures(figures):
    assert list(figures) == ["ruler", "babilong", "phonebook", "longbench_e", "extrapolation_by_position"]


def test_one_line_per_model_with_error_bars_in_every_panel(figures):
    ruler = figures["ruler"]
    # each task's first metric, then the first aggregate with records (ruler_13, not ruler_11 as well)
    assert [ax.get_title() for ax in panels(ruler)] == ["niah_single_1", "vt", "RULER (13 tasks)"]
    for name in ("ruler", "babilong", "phonebook", "longbench_e"):
        for ax in panels(figures[name]):
            lines = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
            assert [c.get_label() for c in lines] == list(MODELS)
            for container in lines:
                [bars] = container.lines[2]
                heights = [segment[1][1] - segment[0][1] for segment in bars.get_segments()]
                assert heights == pytest.approx([2 * 5.0] * len(heights))  # +-1 stderr, in percent
    assert [ax.get_ylabel() for ax in panels(ruler)] == ["string_match_all (%)"] * 2 + ["score (%)"]
    niah = panels(ruler)[0]
    assert [list(c.lines[0].get_ydata()) for c in niah.containers] == [pytest.approx([90, 90]),
                                                                       pytest.approx([80, 80])]


def test_lengths_and_buckets_on_the_x_axis(figures):
    ticks = lambda name: [t.get_text() for t in panels(figures[name])[0].get_xticklabels()]  # noqa: E731
    assert ticks("ruler") == ["4K", "8K"] and ticks("babilong") == ["0K", "4K", "8K"]
    assert ticks("longbench_e") == ["0-4k", "4-8k", "8k+"]  # the suite's order, not the records'
    assert [ax.get_title() for ax in panels(figures["babilong"])] == ["qa1", "BABILong (qa1-qa5)"]


def test_phonebook_shades_the_spread_between_seeds(figures):
    [ax] = panels(figures["phonebook"])
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(20) and max(ys) == pytest.approx(40)  # 30 +- 10 (seed_std 0.1, in percent)
    assert "sd between seeds" in figures["phonebook"].get_supxlabel()
    assert "sd between seeds" not in figures["ruler"].get_supxlabel()


def test_a_suite_run_at_one_length_still_draws():
    records = [r for r in study_records() if r.suite == "ruler" and r.length == 4096]
    [(name, figure)] = suite_figures(records, {"ruler": SUITES["ruler"]})
    ax = panels(figure)[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4K"]
    assert [len(c.lines[0].get_xdata()) for c in ax.containers] == [1, 1]


def test_files_are_written_with_the_same_bytes_every_time(tmp_path):
    suites = {name: SUITES[name] for name in ("ruler", "extrapolation")}
    first = write_plots(study_figures(study_records(), suites), tmp_path / "a")
    again = write_plots(study_figures(study_records(), suites), tmp_path / "b")
    assert [p.name for p in first] == ["ruler.svg", "ruler.png", "extrapolation_by_position.svg",
                                       "extrapolation_by_position.png"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    svg = (tmp_path / "a" / "ruler.svg").read_text()
    assert "<dc:date>" not in svg and 'id="ruler-' in svg and 'id="figure_1"' not in svg
    assert (tmp_path / "a" / "ruler.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runs_without_lengths_say_there_is_nothing_to_plot(tmp_path, capsys):
    from path_eval.cli import main
    from path_eval.results import write_results

    write_results([r for r in study_records() if r.suite == "table2"], tmp_path / "run" / "results.json")
    assert main(["report", str(tmp_path / "run"), "--format", "csv", "--plot", str(tmp_path / "plots")]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("model,PIQA acc") and "plot: none" in captured.err
    assert not (tmp_path / "plots").exists()


@pytest.mark.parametrize("count, grid", [(5, (2, 3)), (4, (1, 4)), (7, (2, 4)), (9, (3, 3))])
def test_panels_fill_their_rows_evenly(count, grid):
    """No row of blanks beside one panel: 5 panels are drawn 3 + 2, not 4 + 1; at most one slot
    of the grid is left empty per row."""
    from path_eval.reports.plots import by_length_figure
    from path_eval.suites import SuiteSpec

    suite = SuiteSpec.model_validate({"name": "s", "description": "d", "lengths": [1024, 2048], "tasks": [
        {"name": f"t{i}", "generator": "ruler/niah_single_1", "metrics": ["string_match_all"]} for i in range(count)]})
    records = [record("s", "m", f"t{i}", "string_match_all", 0.5, length=n) for i in range(count) for n in (1024, 2048)]
    figure = by_length_figure(records, suite)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert len(visible) == count
    rows, columns = figure.axes[0].get_subplotspec().get_gridspec().get_geometry()
    assert (rows, columns) == grid and rows * columns - count < rows
