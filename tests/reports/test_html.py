"""`report --html`: one self-contained page of a two-model, two-suite study. Checked with Python's
html.parser (every table and plot present, no external URL, every element closed in order), its
plots byte for byte against what `--plot` writes, and, where Debian's chromium and playwright are
installed (neither is a dependency: CI skips that test), opened in a real headless browser."""
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.results import write_results
from tests.helpers import counted
from tests.reports.test_plots import study_records

# Elements HTML never closes; inside inline SVG, matplotlib's empty elements are written <x/>.
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "embed", "source", "track", "wbr"}
FETCHING = {"link", "script", "img", "iframe", "object", "embed", "audio", "video", "source"}


class PageStructure(HTMLParser):
    """Tags by name, the nesting errors met, and every attribute that could point outside the page."""

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.counts, self.pointers = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        self.pointers += [(tag, name, value) for name, value in attrs
                          if name in ("href", "xlink:href", "src", "srcset", "action", "data", "poster")
                          or (value and "url(" in value)]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "style" and "url(" in data:
            self.pointers.append(("style", "css", data))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Two stored runs (RULER and PhoneBook, two models each) and what `report --plot --html` makes."""
    root = tmp_path_factory.mktemp("study")
    runs = []
    for suite in ("ruler", "phonebook"):
        write_results([r for r in study_records() if r.suite == suite], root / suite / "results.json")
        runs.append(str(root / suite))
    assert main(["report", *runs, "--format", "markdown", "--plot", str(root / "plots"),
                 "--html", str(root / "study.html")]) == 0
    return root


def test_the_page_holds_every_table_and_plot_and_nothing_external(study):
    page = (study / "study.html").read_text()
    parser = PageStructure()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    # two suite tables; per run: protocol-less (no plan.json) provenance table
    assert parser.counts["table"] == 2 + 2 and parser.counts["svg"] == 2 and parser.counts["figure"] == 2
    assert not FETCHING & set(parser.counts)
    for tag, name, value in parser.pointers:  # links and references inside the page only
        assert value.count("url(") == value.count("url(#") if "url(" in value else value.startswith("#"), value
    assert {name for _, name, _ in parser.pointers} == {"href", "xlink:href", "clip-path"}
    assert "niah_single_1 string_match_all" in page and "PhoneBook phonebook_exact_match" in page
    assert "No plan.json beside the results" in page and page.count("provenance per model") == 2


def test_the_plots_in_the_page_are_the_files_plot_writes(study):
    page = (study / "study.html").read_text()
    for name in ("ruler", "phonebook"):
        svg = (study / "plots" / f"{name}.svg").read_text()
        assert svg[svg.index("<svg"):] in page
        assert (study / "plots" / f"{name}.png").is_file()


def test_the_page_is_the_same_for_the_same_runs(study, tmp_path):
    assert main(["report", str(study / "ruler"), str(study / "phonebook"), "--format", "csv",
                 "--html", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == (study / "study.html").read_bytes()


def test_plot_and_html_together_draw_each_figure_once(study, tmp_path, monkeypatch):
    from path_eval.reports import plots

    calls = {"figure": 0, "svg": 0}
    monkeypatch.setattr(plots, "by_length_figure", counted(calls, "figure", plots.by_length_figure))
    monkeypatch.setattr(plots, "svg_text", counted(calls, "svg", plots.svg_text))
    assert main(["report", str(study / "ruler"), str(study / "phonebook"), "--format", "csv",
                 "--plot", str(tmp_path / "plots"), "--html", str(tmp_path / "again.html")]) == 0
    assert calls == {"figure": 2, "svg": 2}  # RULER's and PhoneBook's, for the files and the page alike
    assert (tmp_path / "again.html").read_bytes() == (study / "study.html").read_bytes()


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_the_page_opens_in_a_headless_browser_without_errors(study):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    url = Path(study / "study.html").resolve().as_uri()
    problems, requests = [], []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda err: problems.append(str(err)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url, wait_until="load")
        shown = "[...document.querySelectorAll('svg, table')].filter(e => !e.closest('details:not([open])'))"
        # each expression as a function: playwright reads a string holding "=>" as one
        sizes = page.evaluate(f"() => {shown}.map(e => {{ const r = e.getBoundingClientRect(); "
                              "return [e.tagName, r.width, r.height]; })")
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        browser.close()
    assert problems == [] and requests == [url]
    assert sorted(tag for tag, _, _ in sizes) == ["TABLE"] * 2 + ["svg"] * 2  # the provenance tables folded
    assert all(width > 100 and height > 50 for _, width, height in sizes)
    assert widths[0] <= widths[1]  # unfolded, the provenance (hashes shortened) scrolls no wider than the window


def test_the_page_is_titled_captioned_with_stderr_and_its_provenance_folded(study):
    """The title names the suites and models; each figure's caption says what it shows (not only
    its file); the suite tables hold "value ± stderr"; the provenance tables sit in a closed
    <details>, each sha256 shown by its first 12 digits with the whole hash on hover."""
    import hashlib
    import re

    page = (study / "study.html").read_text()
    title = re.search(r"<title>(.*)</title>", page)[1]
    assert title.startswith("ruler, phonebook: ") and "(path-eval)" in title
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    assert len(captions) == 2 and all("against context length, one line per model" in c for c in captions)
    assert re.search(r"<td>\d+\.\d ± \d+\.\d</td>", page)  # fractions x100 with their standard error
    folded = re.findall(r"<details><summary>provenance per model.*?</details>", page, re.S)
    assert len(folded) == 2 and all("<table>" in part for part in folded)
    from path_eval.reports.html import table

    digest = hashlib.sha256(b"weights").hexdigest()
    cell = table(["provenance", "m"], [["weights_sha256", digest]], text_columns=2)
    assert f'<td class="text"><abbr title="{digest}">{digest[:12]}…</abbr></td>' in cell
    assert not re.search(r">[0-9a-f]{64}<", cell)  # no whole hash as a cell's text
