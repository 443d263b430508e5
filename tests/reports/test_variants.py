"""`report --layout variants --baseline NAME`: per task metric, the models as rows (the baseline
first) and the lengths as columns, each cell the value ± its record's stderr, marked * where the
model differs from the baseline at p < 0.05, paired on the same samples. Checked on hand-made run
folders (two runs of one suite, the per-sample logs `eval.py run` writes) against p-values computed
here from those logs: scipy's binomial test of the discordant pairs (McNemar exact) for 0/1 scores,
a paired t test (and a bootstrap written here) for perplexities and aggregates."""
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan
from path_eval.results import ResultRecord, write_results
from path_eval.suites import SuiteSpec
from tests.helpers import records

PROVENANCE = records()[0].provenance
SUITE = SuiteSpec.model_validate({
    "name": "vstudy", "description": "variants against a baseline", "lengths": [1024, 2048],
    "tasks": [{"name": "niah", "label": "NIAH", "generator": "ruler/niah_single_1", "metrics": ["string_match_all"]},
              {"name": "niah_b", "generator": "ruler/niah_single_1", "metrics": ["string_match_all"]},
              {"name": "heldout", "label": "Held-out", "corpus": {"package_file": "zoo/heldout/jack_sheppard_tail.txt"},
               "metrics": ["perplexity"]}],
    "aggregates": [{"name": "both", "label": "Both NIAH", "metric": "score",
                    "mean_of": ["niah/string_match_all", "niah_b/string_match_all"]}]})
SAMPLES = 60
BLOCKS = 25


# The baseline's 0/1 scores on `niah` at each length; each model's differ from them by the
# discordant pairs of NIAH, (model, length) -> (only the baseline right, only the model right).
NIAH_BASE = {1024: [1] * 20 + [0] * 40, 2048: [1] * 28 + [0] * 32}


def model_scores(base: list[int], only_base: int, only_model: int) -> list[int]:
    """A model's 0/1 scores: `only_base` of the baseline's right answers wrong, `only_model` of its
    wrong answers right."""
    right = [i for i, s in enumerate(base) if s == 1]
    wrong = [i for i, s in enumerate(base) if s == 0]
    scores = list(base)
    for i in right[:only_base]:
        scores[i] = 0
    for i in wrong[:only_model]:
        scores[i] = 1
    return scores


# The McNemar cases: (0, 7): p = 2 * 0.5^7 = 0.016; (3, 12): 0.035, where an unpaired z test on
# the two stderrs is ~0.1; (3, 10): 0.09, between 0.05 and 0.1; (12, 3): 0.035.
NIAH = {("a", 1024): (0, 7), ("a", 2048): (3, 12), ("b", 1024): (0, 7), ("b", 2048): (3, 10),
        ("c", 1024): (12, 3), ("d", 1024): (0, 7)}


def doc(task: str, length: int, i: int) -> dict:
    return {"question": f"{task} question {i} at {length}"}


def write_run(folder: Path, models: list[str], logs: dict, recs: list[ResultRecord]) -> Path:
    """A run folder as `eval.py run` leaves it: results.json, plan.json, suite.json and
    samples/<model>/<task>@<length>.jsonl; `logs` maps (model, task, length) to log rows."""
    items = {}
    for model, task, length in logs:
        kind = "corpus" if task == "heldout" else "generated"
        item = items.setdefault((task, length), PlannedItem(task=task, kind=kind, length=length,
                                                            lm_eval_tasks=[f"{task}@{length}"]))
        item.models.append(model)
    for (model, task, length), rows in logs.items():
        file = folder / "samples" / model / f"{task}@{length}.jsonl"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    plan = ResolvedPlan(suite=SUITE, models=[PlannedModel(path=folder, name=m, source=str(folder), max_length=4096)
                                             for m in models], items=list(items.values()), data_dir=folder)
    (folder / "plan.json").write_text(plan.model_dump_json())
    (folder / "suite.json").write_text(SUITE.model_dump_json())
    write_results(recs, folder / "results.json")
    return folder


def record(model, task, length, metric, value, stderr, n) -> ResultRecord:
    return ResultRecord(suite="vstudy", model=model, task=task, length=length, metric=metric, value=value,
                        stderr=stderr, n=n, higher_is_better=metric != "perplexity", provenance=PROVENANCE)


def binary_log(task, length, scores, docs=None) -> list[dict]:
    return [{"doc_id": i, "doc": (docs or doc)(task, length, i), "scores": {"string_match_all": s}}
            for i, s in enumerate(scores)]


def binary_record(model, task, length, scores) -> ResultRecord:
    stderr = float(np.std(scores, ddof=1) / np.sqrt(len(scores)))
    return record(model, task, length, "string_match_all", float(np.mean(scores)), stderr, len(scores))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Run 1: models a, base, b, c (in that order), e; run 2: d, on the same samples as run 1.
    niah at 1024 and 2048 (c and d only at 1024, e at 1024 on other questions); niah_b and the
    aggregate `both` at 1024 (base, a, b); held-out perplexity at 1024 (base, a, b) and at 2048
    (a only: the baseline has none)."""
    root = tmp_path_factory.mktemp("variants")
    logs, recs = {}, {}
    for length, base in NIAH_BASE.items():
        logs["base", "niah", length] = binary_log("niah", length, base)
        recs["base", "niah", length] = binary_record("base", "niah", length, base)
    for (model, length), (only_base, only_model) in NIAH.items():
        scores = model_scores(NIAH_BASE[length], only_base, only_model)
        logs[model, "niah", length] = binary_log("niah", length, scores)
        recs[model, "niah", length] = binary_record(model, "niah", length, scores)
    other = [1] * 50 + [0] * 10  # e: far better, but on other questions: not paired
    logs["e", "niah", 1024] = binary_log("niah", 1024, other, docs=lambda t, n, i: {"question": f"other {i}"})
    recs["e", "niah", 1024] = binary_record("e", "niah", 1024, other)
    # niah_b and the aggregate: a answers 8 more questions of niah_b (and 7 more of niah); b 7 fewer
    # of niah_b (and 7 more of niah: the aggregate's delta is 0)
    niah_b = {"base": [1] * 24 + [0] * 36, "a": [1] * 32 + [0] * 28, "b": [1] * 17 + [0] * 43}
    for model, scores in niah_b.items():
        logs[model, "niah_b", 1024] = binary_log("niah_b", 1024, scores)
        recs[model, "niah_b", 1024] = binary_record(model, "niah_b", 1024, scores)
        part = logs[model, "niah", 1024]
        value = (np.mean([r["scores"]["string_match_all"] for r in part]) + np.mean(scores)) / 2
        recs[model, "both", 1024] = record(model, "both", 1024, "score", float(value), 0.0123, 2 * SAMPLES)
    # perplexity: a's NLL lower on every block by 0.02-0.06 per token; b's off by a zero-mean
    # alternation, whose paired test is nowhere near significant
    rng = np.random.default_rng(3)
    base_nll = rng.uniform(2.8, 3.4, BLOCKS)
    per_token = {"base": base_nll, "a": base_nll - rng.uniform(0.02, 0.06, BLOCKS),
                 "b": base_nll + 0.05 * np.resize([1, -1], BLOCKS) + rng.normal(0, 1e-3, BLOCKS)}
    count = 1023
    for model, nll in per_token.items():
        logs[model, "heldout", 1024] = [{"block": i, "tokens_sha256": f"block {i}", "nll_sum": [float(x * count)],
                                         "count": [count]} for i, x in enumerate(nll)]
        recs[model, "heldout", 1024] = record(model, "heldout", 1024, "perplexity", float(np.exp(nll.mean())),
                                              {"base": 0.4321, "a": 0.5678, "b": 1.2345}[model], BLOCKS)
    logs["a", "heldout", 2048] = logs["a", "heldout", 1024]
    recs["a", "heldout", 2048] = recs["a", "heldout", 1024].model_copy(update={"length": 2048})
    run1 = ["a", "base", "b", "c", "e"]
    # records by length, the longer first: the columns must come out sorted anyway
    ordered = sorted(recs.items(), key=lambda item: -item[0][2])
    write_run(root / "run1", run1, {k: v for k, v in logs.items() if k[0] in run1},
              [r for k, r in ordered if k[0] in run1])
    write_run(root / "run2", ["d"], {k: v for k, v in logs.items() if k[0] == "d"},
              [r for k, r in ordered if k[0] == "d"])
    return root, logs, recs


def report(study, *options) -> tuple[int, str, str]:
    root = study[0]
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", str(root / "run1"), str(root / "run2" / "results.json"), *options])
    return code, out.getvalue(), err.getvalue()


def markdown_tables(text: str) -> dict[str, tuple[list[str], list[list[str]], str]]:
    """title -> (header, rows, the legend line below) of `render`'s Markdown tables."""
    tables = {}
    for match in re.finditer(r"\*\*(.+?)\*\*\n\n((?:\|.*\|\n)+)\n(.*)\n", text):
        lines = [[c.strip() for c in line.strip("|").split("|")] for line in match.group(2).splitlines()]
        tables[match.group(1)] = (lines[0], lines[2:], match.group(3))
    return tables


@pytest.fixture(scope="module")
def tables(study):
    code, out, err = report(study, "--layout", "variants", "--baseline", "base", "--format", "markdown")
    assert code == 0 and err == "", err
    return markdown_tables(out), out


def independent_p(base_rows: list[dict], model_rows: list[dict]) -> float | None:
    """McNemar exact from the logs: the rows paired by document; None where the documents differ."""
    base = {json.dumps(r["doc"]): r["scores"]["string_match_all"] for r in base_rows}
    model = {json.dumps(r["doc"]): r["scores"]["string_match_all"] for r in model_rows}
    if base.keys() != model.keys():
        return None
    only_base = sum(base[k] == 1 and model[k] == 0 for k in base)
    only_model = sum(base[k] == 0 and model[k] == 1 for k in base)
    return 1.0 if only_base + only_model == 0 else stats.binomtest(only_base, only_base + only_model, 0.5).pvalue


def test_one_table_per_task_metric_and_aggregate_with_the_baseline_first_and_lengths_sorted(tables):
    found, _ = tables
    assert list(found) == ["vstudy: NIAH string_match_all", "vstudy: niah_b string_match_all",
                           "vstudy: Held-out perplexity", "vstudy: Both NIAH score"]
    header, rows, _ = found["vstudy: NIAH string_match_all"]
    assert header == ["model", "@1024", "@2048"]
    assert [row[0] for row in rows] == ["base", "a", "b", "c", "e", "d"]  # run 1's order, then run 2's
    assert [row[0] for row in found["vstudy: Held-out perplexity"][1]] == ["base", "a", "b"]


def test_a_cell_is_marked_exactly_where_the_mcnemar_p_from_the_logs_is_below_005(tables, study):
    _, logs, recs = study
    header, rows, legend = tables[0]["vstudy: NIAH string_match_all"]
    found = []
    for row in rows[1:]:
        model = row[0]
        for column, cell in zip(header[1:], row[1:]):
            length = int(column.removeprefix("@"))
            if (model, "niah", length) not in recs:
                assert cell == "-"
                continue
            p = independent_p(logs["base", "niah", length], logs[model, "niah", length])
            if p is None:  # e: other questions, not paired, so not tested
                assert cell.endswith(" †") and not cell.endswith("*")
                continue
            assert cell.endswith(" *") == (p < 0.05), (model, length, p, cell)
            found.append(p)
    assert len(found) == 6 and any(0.05 < p < 0.1 for p in found) and any(0.03 < p < 0.05 for p in found)
    # the case an unpaired test misses: (3, 12) at 2048, McNemar p = 0.035
    assert rows[1][2].endswith(" *")
    stderrs = [recs[m, "niah", 2048].stderr for m in ("base", "a")]
    assert 2 * stats.norm.sf(abs(recs["a", "niah", 2048].value - recs["base", "niah", 2048].value)
                             / np.hypot(*stderrs)) > 0.05
    assert legend.startswith("baseline base: * p < 0.05 against it, paired on the same samples (McNemar exact)")
    assert legend.endswith("† not tested, 1 cell(s): samples differ")


def test_the_value_and_stderr_shown_are_the_records(tables, study):
    _, _, recs = study
    for title, task in (("vstudy: NIAH string_match_all", "niah"), ("vstudy: Held-out perplexity", "heldout"),
                        ("vstudy: Both NIAH score", "both")):
        header, rows, _ = tables[0][title]
        for row in rows:
            for column, cell in zip(header[1:], row[1:]):
                key = (row[0], task, int(column.removeprefix("@")))
                if cell == "-":
                    continue
                value, stderr = cell.rstrip(" *†").split(" ± ")
                r = recs[key]
                scale, digits = (1, 2) if task == "heldout" else (100, 1)
                assert value == f"{scale * r.value:.{digits}f}" and stderr == f"{scale * r.stderr:.{digits}f}"


def test_perplexity_and_aggregate_marks_agree_with_paired_tests_computed_here(tables, study):
    _, logs, _ = study
    header, rows, legend = tables[0]["vstudy: Held-out perplexity"]
    nll = {m: np.array([r["nll_sum"][0] / r["count"][0] for r in logs[m, "heldout", 1024]]) for m in ("base", "a", "b")}
    p = {m: stats.ttest_rel(nll[m], nll["base"]).pvalue for m in ("a", "b")}
    assert p["a"] < 1e-6 and p["b"] > 0.5  # far from 0.05 on either side: the bootstrap agrees
    assert header == ["model", "@1024", "@2048"]
    assert [row[2] for row in rows] == ["-", "-", "-"]  # a has a record at 2048; the baseline has none
    assert rows[1][1].endswith(" *") and not rows[2][1].endswith("*")
    assert "paired bootstrap, 10,000 resamples" in legend
    # the aggregate: the mean of niah and niah_b, a stratum each, resampled here within each stratum
    header, rows, legend = tables[0]["vstudy: Both NIAH score"]
    rng = np.random.default_rng(11)

    def scores(model):
        return [np.array([r["scores"]["string_match_all"] for r in logs[model, task, 1024]], float)
                for task in ("niah", "niah_b")]

    def bootstrap_p(model):
        deltas = 0
        for base, other in zip(scores("base"), scores(model)):
            index = rng.integers(0, SAMPLES, (4000, SAMPLES))
            deltas = deltas + (other[index].mean(1) - base[index].mean(1)) / 2
        return 2 * min(np.mean(deltas <= 0), np.mean(deltas >= 0))

    p = {m: min(1.0, bootstrap_p(m)) for m in ("a", "b")}
    assert p["a"] < 0.01 and p["b"] > 0.5
    assert [row[0] for row in rows] == ["base", "a", "b"]
    assert rows[1][1].endswith(" *") and not rows[2][1].endswith("*")


def test_markdown_output(tables, study):
    _, out = tables
    _, _, recs = study

    def cell(model, length, mark=""):
        r = recs[model, "niah", length]
        return f"{100 * r.value:.1f} ± {100 * r.stderr:.1f}{mark}"

    expected = "\n".join([
        "**vstudy: NIAH string_match_all**", "",
        "| model | @1024 | @2048 |", "|---|---|---|",
        f"| base | {cell('base', 1024)} | {cell('base', 2048)} |",
        f"| a | {cell('a', 1024, ' *')} | {cell('a', 2048, ' *')} |",
        f"| b | {cell('b', 1024, ' *')} | {cell('b', 2048)} |",
        f"| c | {cell('c', 1024, ' *')} | - |",
        f"| e | {cell('e', 1024, ' †')} | - |",
        f"| d | {cell('d', 1024, ' *')} | - |", ""])
    assert out.startswith(expected)
    assert out.count("**vstudy: ") == 4


def test_the_other_formats(study):
    code, out, _ = report(study, "--layout", "variants", "--baseline", "base", "--format", "csv")
    assert code == 0
    assert "vstudy: NIAH string_match_all,@1024,@2048\r\nbase," in out
    code, out, _ = report(study, "--layout", "variants", "--baseline", "base", "--format", "latex")
    assert code == 0 and out.startswith("% vstudy: NIAH string_match_all\n% baseline base: ")
    assert out.count(r"\begin{tabular}{lrr}") == 2 and out.count(r"\begin{tabular}{lr}") == 2  # niah_b, both: 1024
    code, out, _ = report(study, "--layout", "variants", "--baseline", "d")
    assert code == 0 and "vstudy: NIAH string_match_all" in " ".join(out.split())  # a title wraps
    assert "left out, no record of d: vstudy: niah_b string_match_all" in " ".join(out.split())


def test_a_missing_baseline_is_one_error_line_naming_the_models(study):
    code, out, err = report(study, "--layout", "variants", "--baseline", "rope")
    assert code == 2 and out == ""
    assert err == "error: --baseline rope: no such model in these runs: choose one of a, base, b, c, e, d\n"


@pytest.mark.parametrize("options, message", [
    (["--baseline", "base"], "--baseline NAME is only valid with --layout variants"),
    (["--layout", "table3", "--baseline", "base"], "--baseline NAME is only valid with --layout variants"),
    (["--layout", "variants"], "--layout variants needs --baseline NAME"),
])
def test_baseline_goes_with_the_variants_layout_only(study, options, message):
    code, out, err = report(study, *options)
    assert code == 2 and out == "" and err.startswith(f"error: {message}") and err.count("\n") == 1


def test_the_html_page_holds_the_variant_tables(study, tmp_path):
    page = tmp_path / "study.html"
    code, _, err = report(study, "--layout", "variants", "--baseline", "base", "--format", "csv", "--html", str(page))
    assert code == 0 and err == f"html: {page}\n"
    text = page.read_text()
    assert "<h2>Variants against base</h2>" in text
    assert "<caption>vstudy: NIAH string_match_all: baseline base: * p &lt; 0.05" in text
    assert text.count("<table>") >= 4 + 1  # the variant tables, then the suite's own table, runs...


ROOT = Path(__file__).resolve().parents[2]
STUDY = {part: ROOT / folder for part, folder in
         json.loads((ROOT / "results" / "zoo" / "study" / "index.json").read_text())["gpu"]["parts"].items()}
LANGUAGE_MODELS = ("rope", "fox", "path", "path_fox")


def test_on_the_committed_zoo_study_each_retrieval_mark_is_the_mcnemar_p_of_its_logs(capsys):
    """The view on the zoo study's committed parts (results/zoo/study/gpu/, one run folder per
    language model): every NIAH single_1 and multikey_2 cell of FoX, PaTH and PaTH-FoX, 1x to 16x, is
    marked exactly where scipy's binomial test of the discordant pairs against RoPE, read from the
    per-sample logs of the two parts, gives p < 0.05."""
    folders = [str(STUDY[model]) for model in LANGUAGE_MODELS]
    assert main(["report", *folders, "--layout", "variants", "--baseline", "rope", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    lengths = (1024, 2048, 4096, 8192, 16384)
    checked = 0
    for task, label in (("niah_single_1", "niah_single_1 string_match_all"),
                        ("niah_multikey_2", "niah_multikey_2 string_match_all")):
        block = out.split(f"**zoo_study: {label}**", 1)[1].split("\n\n", 2)[1]
        rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in block.splitlines()[2:]}

        scores = {}  # (model, length) -> the per-sample scores in the compact copy's log archive
        for model in LANGUAGE_MODELS:
            with tarfile.open(STUDY[model] / "samples.tar.xz") as archive:
                for length in lengths:
                    log = archive.extractfile(f"samples/{model}/{task}_{length}_s1234.jsonl").read()
                    scores[model, length] = [json.loads(line)["scores"]["string_match_all"]
                                             for line in log.decode().splitlines()]

        for model in LANGUAGE_MODELS[1:]:
            for column, length in enumerate(lengths):
                base, other = np.array(scores["rope", length]), np.array(scores[model, length])
                assert len(base) == len(other) == 64
                only_base, only_other = int(((base == 1) & (other == 0)).sum()), int(((base == 0) & (other == 1)).sum())
                p = 1.0 if only_base + only_other == 0 else \
                    stats.binomtest(only_base, only_base + only_other, 0.5).pvalue
                assert rows[model][column].rstrip(" |").endswith("*") == (p < 0.05), (task, model, length, p)
                checked += 1
    assert checked == 30


def test_the_python_api_gives_the_same_view():
    from path_eval.api import load_results

    study = load_results(*(STUDY[model] for model in LANGUAGE_MODELS))
    text = study.report("variants", "markdown", baseline="rope")
    assert "**zoo_study: niah_single_1 string_match_all**" in text and "| rope | 100.0 ± 0.0 | 0.0 ± 0.0 |" in text
    with pytest.raises(PathEvalError, match="go together"):
        study.report("variants", "markdown")


def test_a_task_of_the_baselines_counterparts_is_tabled_against_its_counterpart(tmp_path, capsys):
    """The zoo's flip-flop models (flipflop_rope, ...) hold no `rope`: their table takes
    flipflop_rope as the baseline and says so, instead of dropping out. RoPE's 4 of 4 right going
    to 0 of 4 is McNemar p = 0.125: the legend says that no * can appear at 4 samples."""
    scores = {"rope": [1] * 6, "fox": [0] * 6, "flipflop_rope": [1] * 4, "flipflop_fox": [0] * 4}
    task = {"rope": "niah", "fox": "niah", "flipflop_rope": "niah_b", "flipflop_fox": "niah_b"}
    logs = {(m, task[m], 1024): binary_log(task[m], 1024, s) for m, s in scores.items()}
    recs = [binary_record(m, task[m], 1024, s) for m, s in scores.items()]
    write_run(tmp_path / "zoo", list(scores), logs, recs)
    assert main(["report", str(tmp_path / "zoo"), "--layout", "variants", "--baseline", "rope",
                 "--format", "markdown"]) == 0
    found = markdown_tables(capsys.readouterr().out)
    header, rows, note = found["vstudy: niah_b string_match_all"]
    assert [row[0] for row in rows] == ["flipflop_rope", "flipflop_fox"] and rows[1][1] == "0.0 ± 0.0"  # no *
    assert note.startswith("flipflop_rope stands for rope, which has no record here; baseline flipflop_rope: ")
    assert note.endswith("1 McNemar test(s) cannot reach p < 0.05 at their sample count (least p 0.12, "
                         "2 * 0.5^samples): no * can appear there; 6 samples or more could")
    _, rows, note = found["vstudy: NIAH string_match_all"]
    assert rows[1][1] == "0.0 ± 0.0 *" and "cannot reach" not in note  # 6 samples: p = 0.031
