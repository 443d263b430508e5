"""`report --layout state_tracking`: the state-tracking diagnostics in the layout of the PaTH
paper's Figure 2, and the paper's stated directions, each decided by the data with its test.

The models are the training workshop's (training/diagnostics.py), one per variant, depth or N, and
seed, named a5_VARIANT_LDEPTH_sSEED and mqrarN_VARIANT_sSEED; the variant is checked against the
record's provenance (the checkpoint's own config), the depth and seed read from the name. The tasks
are the suite's A5 and MQRAR-N tasks (their kinds, whatever their names), and flip-flop's.

- MQRAR-N: token accuracy at the queries against N, per variant: the mean over seeds, and how many
  seeds solve it (at least 90%).
- A5: per variant, length and metric (token, sequence, final accuracy: neither paper says which one
  its 90% applies to), the mean over seeds at each depth, and the fewest layers at which a majority
  of seeds reach 90% ("solved"): one lucky seed decides nothing.
- Directions: PaTH solves MQRAR-N for N < 4 (a majority of its seeds at 90% for each N = 1..3); FoX
  struggles there where PaTH succeeds (of the pairs by N and seed over N < 4 that exactly one of the
  two solves, PaTH is that one: one-sided exact sign test, p < 0.05; a difference between two
  failures, 1.1% against 0.0%, is no success of PaTH's); PaTH solves A5 with fewer layers than RoPE
  and FoX (its fewest layers below theirs, at the trained length, per metric); flip-flop error PaTH
  below RoPE in distribution and sparse (the paired test of `compare` on the same sequences,
  p < 0.05). Each is marked reproduced,
  not reproduced, untested (no records), or undecided: A5's direction where neither PaTH nor a
  baseline reaches 90% in a majority of seeds at any depth tried, and FoX against PaTH on MQRAR-N
  where neither solves any pair, so the models, not the attention, decide nothing (more steps or
  depth would)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from path_eval.reports.paired import BOOTSTRAP_RESAMPLES, DeltaTest, RunSamples, delta_test
from path_eval.reports.stored import StoredRun
from path_eval.reports.tables import display, logs_scores, render
from path_eval.results import ResultRecord
from path_eval.tasks.a5 import TRAINED_LENGTH

THRESHOLD = 0.9
VARIANTS = ("rope", "fox", "path", "path_fox")
BASELINES = ("rope", "fox")  # the paper's baselines for PaTH on A5
A5_METRICS = ("token_accuracy", "sequence_accuracy", "final_accuracy")
MQRAR_METRIC = "token_accuracy"
NAME = re.compile(r"^(?:a5|mqrar\d+|flipflop)_(?P<variant>rope|fox|path_fox|path)(?:_L(?P<depth>\d+))?"
                  r"(?:_s(?P<seed>\d+))?$")
REPRODUCED, NOT_REPRODUCED, UNTESTED, UNDECIDED = "reproduced", "not reproduced", "untested", "undecided"


@dataclass(frozen=True)
class Trained:
    """A record of a diagnostic model: its variant, depth (A5), seed, and the record."""

    variant: str
    depth: int | None
    seed: int
    record: ResultRecord


def record_variant(record: ResultRecord) -> str:
    """The variant the checkpoint's config says (fla's attention, or transformers' Llama: RoPE)."""
    return record.provenance.variant or ("rope" if record.provenance.model_type == "llama" else "unknown")


def trained(record: ResultRecord) -> Trained | None:
    """The record's model as the workshop names it, or None (not a diagnostic model, or a name
    whose variant the checkpoint contradicts)."""
    match = NAME.match(record.model)
    if match is None or match["variant"] != record_variant(record):
        return None
    return Trained(match["variant"], int(match["depth"]) if match["depth"] else None, int(match["seed"] or 0), record)


@dataclass
class Diagnostics:
    """The records of one study by what they measure."""

    a5: dict[tuple[str, int, str], dict[int, list[float]]]  # (variant, length, metric) -> depth -> per-seed values
    mqrar: dict[tuple[str, int], dict[int, float]]  # (variant, N) -> seed -> token accuracy
    flipflop: dict[tuple[str, str], tuple[ResultRecord, StoredRun]]  # (variant, task) -> record and its run
    trained_length: int | None
    form: str  # the A5 form of the `a5` records (product or identity: the task's option)


def located(runs: list[StoredRun]) -> list[tuple[ResultRecord, StoredRun | None]]:
    return [(record, run) for run in runs for record in run.records]


def a5_forms(records: list[tuple[ResultRecord, StoredRun | None]], suites: dict) -> list[str]:
    """The A5 forms the records' tasks use, the product form first."""
    forms = {suites[r.suite].task(r.task).options.form for r, _ in records
             if r.suite in suites and r.task in {t.name for t in suites[r.suite].tasks}
             and suites[r.suite].task(r.task).kind == "a5"}
    return sorted(forms, key=lambda form: form != "product")


def collect(records: list[tuple[ResultRecord, StoredRun | None]], suites: dict, form: str = "product") -> Diagnostics:
    """The diagnostics' records by what they measure (A5: the tasks of one form), each with the run
    holding its logs (None: no paired test of flip-flop)."""
    a5: dict = {}
    a5_seeds: dict = {}
    mqrar: dict = {}
    flipflop: dict = {}
    lengths = set()
    for record, run in records:
        suite = suites.get(record.suite)
        model = trained(record)
        if suite is None or model is None or record.bucket is not None or \
                record.task not in {t.name for t in suite.tasks}:
            continue
        task = suite.task(record.task)
        if task.kind == "a5" and task.options.form == form and model.depth is not None and record.metric in A5_METRICS:
            a5_seeds.setdefault((model.variant, record.length, record.metric, model.depth), {})[model.seed] = \
                record.value
            lengths.add(record.length)
        elif task.kind == "mqrar" and record.metric == MQRAR_METRIC:
            mqrar.setdefault((model.variant, task.options.n), {})[model.seed] = record.value
        elif task.kind == "flipflop":
            flipflop.setdefault((model.variant, record.task), (record, run))
    for (variant, length, metric, depth), seeds in a5_seeds.items():
        a5.setdefault((variant, length, metric), {})[depth] = [seeds[s] for s in sorted(seeds)]
    trained_length = TRAINED_LENGTH if TRAINED_LENGTH in lengths else max(lengths, default=None)
    return Diagnostics(a5, mqrar, flipflop, trained_length, form)


def solved(values: list[float]) -> bool:
    """A majority of the seeds at or above the threshold."""
    return sum(v >= THRESHOLD for v in values) * 2 > len(values)


def fewest_layers(by_depth: dict[int, list[float]]) -> int | None:
    return next((depth for depth in sorted(by_depth) if solved(by_depth[depth])), None)


def percent(value: float) -> str:
    return f"{100 * value:.1f}"


def seeds_cell(values: list[float]) -> str:
    """The mean over seeds, and how many seeds reach the threshold."""
    if not values:
        return "-"
    return f"{percent(sum(values) / len(values))} ({sum(v >= THRESHOLD for v in values)}/{len(values)})"


def layers_cell(depth: int | None, tried: list[int]) -> str:
    return str(depth) if depth is not None else f">{max(tried)}" if tried else "-"


def mqrar_table(d: Diagnostics) -> tuple[str, list[str], list[list[str]], str] | None:
    ns = sorted({n for _, n in d.mqrar})
    if not ns:
        return None
    rows = [[variant] + [seeds_cell([seeds[s] for s in sorted(seeds)]) if (seeds := d.mqrar.get((variant, n)))
                         else "-" for n in ns] for variant in VARIANTS if any((variant, n) in d.mqrar for n in ns)]
    return ("MQRAR-N: token accuracy at the queries", ["variant"] + [f"N={n}" for n in ns], rows,
            f"mean over seeds, x100 (seeds at >= {percent(THRESHOLD)}% / seeds)")


def a5_tables(d: Diagnostics) -> list[tuple[str, list[str], list[list[str]], str]]:
    """Per metric, the mean over seeds at each depth at the trained length, and the fewest layers;
    then, where lengths were swept, the fewest layers at each length (token / sequence / final)."""
    tables = []
    note = (f"mean over seeds, x100 (seeds at >= {percent(THRESHOLD)}% / seeds); fewest layers: the smallest depth "
            "where a majority of seeds reach it")
    for metric in A5_METRICS:
        cells = {variant: by_depth for variant in VARIANTS if (by_depth := d.a5.get((variant, d.trained_length, metric)))}
        depths = sorted({depth for by_depth in cells.values() for depth in by_depth})
        if not depths:
            continue
        rows = [[variant] + [seeds_cell(by_depth.get(depth, [])) for depth in depths]
                + [layers_cell(fewest_layers(by_depth), sorted(by_depth))] for variant, by_depth in cells.items()]
        tables.append((f"A5 word problem ({d.form} form), k = {d.trained_length}: {metric.replace('_', ' ')}",
                       ["variant"] + [f"{depth} layer{'s' if depth > 1 else ''}" for depth in depths]
                       + ["fewest layers"], rows, note))
    lengths = sorted({length for _, length, _ in d.a5})
    if len(lengths) > 1:
        rows = []
        for variant in VARIANTS:
            row = [variant]
            for length in lengths:
                fewest = [layers_cell(fewest_layers(by_depth), sorted(by_depth)) if (by_depth := d.a5.get(
                    (variant, length, metric))) else "-" for metric in A5_METRICS]
                row.append(" / ".join(fewest))
            if any(cell != " / ".join(["-"] * len(A5_METRICS)) for cell in row[1:]):
                rows.append(row)
        tables.append((f"A5 word problem ({d.form} form): fewest layers by length (token / sequence / final accuracy)",
                       ["variant"] + [f"k = {length}" + (" (trained)" if length == d.trained_length else "")
                                      for length in lengths], rows,
                       "the smallest depth where a majority of seeds reach 90%; >D: none up to the deepest tried"))
    return tables


def sign_test(differences: list[float]) -> float:
    """One-sided exact sign test that the differences are positive (ties dropped)."""
    positive, nonzero = sum(x > 0 for x in differences), sum(x != 0 for x in differences)
    if not nonzero:
        return 1.0
    return sum(math.comb(nonzero, k) for k in range(positive, nonzero + 1)) / 2 ** nonzero


def p_text(p: float | None) -> str:
    """A bootstrap's p of 0 is below its resolution, not zero."""
    if p is None:
        return "no test"
    return f"p < {1 / BOOTSTRAP_RESAMPLES:g}" if p == 0 else f"p = {p:.3g}"


@dataclass
class Direction:
    claim: str
    test: str
    measured: str
    verdict: str


def mqrar_directions(d: Diagnostics) -> list[Direction]:
    small = (1, 2, 3)
    path = {n: d.mqrar.get(("path", n)) for n in small}
    fox = {n: d.mqrar.get(("fox", n)) for n in small}
    solves = Direction("PaTH solves MQRAR-N for N < 4", "a majority of PaTH's seeds at >= 90% for each N = 1, 2, 3",
                       "", UNTESTED)
    if all(path.values()):
        solves.measured = "; ".join(f"N={n}: {seeds_cell(list(path[n].values()))}" for n in small)
        solves.verdict = REPRODUCED if all(solved(list(path[n].values())) for n in small) else NOT_REPRODUCED
    above = Direction("FoX struggles on MQRAR-N (N < 4) where PaTH succeeds",
                      "pairs by N and seed over N = 1-3 that one of PaTH and FoX solves (>= 90%) and the other not: "
                      "PaTH the one, one-sided exact sign test, p < 0.05", "", UNTESTED)
    pairs = [(path[n][s], fox[n][s]) for n in small if path[n] and fox[n] for s in path[n] if s in fox[n]]
    if pairs:
        path_alone = sum(ours >= THRESHOLD > theirs for ours, theirs in pairs)
        fox_alone = sum(theirs >= THRESHOLD > ours for ours, theirs in pairs)
        p = sign_test([1] * path_alone + [-1] * fox_alone)
        mean = 100 * sum(ours - theirs for ours, theirs in pairs) / len(pairs)
        above.measured = (f"{len(pairs)} pairs: PaTH alone solves {path_alone}, FoX alone {fox_alone}, "
                          f"{p_text(p)}; mean difference {mean:+.1f} points")
        if path_alone + fox_alone:
            above.verdict = REPRODUCED if p < 0.05 else NOT_REPRODUCED
        else:  # every pair both solve (FoX does not struggle) or neither does (nothing to tell)
            above.verdict = NOT_REPRODUCED if any(ours >= THRESHOLD for ours, _ in pairs) else UNDECIDED
    return [solves, above]


def a5_directions(d: Diagnostics) -> list[Direction]:
    directions = []
    for metric in A5_METRICS:
        direction = Direction(f"PaTH solves A5 with fewer layers than RoPE and FoX ({d.form} form, "
                              f"{metric.replace('_', ' ')})",
                              f"fewest layers (a majority of seeds at >= 90%) at k = {d.trained_length}: PaTH's "
                              "below both baselines'", "", UNTESTED)
        cells = {v: d.a5.get((v, d.trained_length, metric)) for v in ("path",) + BASELINES}
        if all(cells.values()):
            fewest = {v: fewest_layers(by_depth) for v, by_depth in cells.items()}
            direction.measured = ", ".join(f"{v} {layers_cell(fewest[v], sorted(cells[v]))}" for v in fewest)
            others = [fewest[v] if fewest[v] is not None else math.inf for v in BASELINES]
            if all(layers is None for layers in fewest.values()):
                direction.verdict = UNDECIDED
            else:
                direction.verdict = REPRODUCED if fewest["path"] is not None and fewest["path"] < min(others) \
                    else NOT_REPRODUCED
        directions.append(direction)
    return directions


def flipflop_directions(d: Diagnostics) -> list[Direction]:
    directions = []
    logs: dict[int, RunSamples | None] = {}
    for task in sorted({task for _, task in d.flipflop}):
        direction = Direction(f"Flip-flop error PaTH below RoPE ({task})",
                              "compare's paired test on the same sequences, p < 0.05", "", UNTESTED)
        rope, path = d.flipflop.get(("rope", task)), d.flipflop.get(("path", task))
        if rope and path:
            for _, run in (rope, path):
                logs.setdefault(id(run), RunSamples(run.folder) if run.folder else None)
            test: DeltaTest = delta_test(rope[0], logs_scores(logs[id(rope[1])], rope[0]), path[0],
                                         logs_scores(logs[id(path[1])], path[0]))
            direction.measured = (f"RoPE {display('flipflop_error', rope[0].value):.3f}%, PaTH "
                                  f"{display('flipflop_error', path[0].value):.3f}%, {test.method} "
                                  + p_text(test.p))
            direction.verdict = REPRODUCED if path[0].value < rope[0].value and test.p is not None and test.p < 0.05 \
                else NOT_REPRODUCED
        directions.append(direction)
    return directions


def state_tracking_tables(runs: list[StoredRun], suites: dict) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, header, rows, note) of every table: MQRAR-N, A5 per form (its metrics at the trained
    length, the fewest layers by length), the directions."""
    records = located(runs)
    forms = a5_forms(records, suites) or ["product"]
    studies = [collect(records, suites, form) for form in forms]
    tables = [t for t in [mqrar_table(studies[0])] if t] + [t for d in studies for t in a5_tables(d)]
    found = mqrar_directions(studies[0]) + [x for d in studies for x in a5_directions(d)] + \
        flipflop_directions(studies[0])
    tables.append(("The PaTH paper's directions (section 4.1, Figure 2)", ["claim", "test", "measured", "verdict"],
                   [[x.claim, x.test, x.measured or "-", x.verdict] for x in found],
                   "untested: the runs hold no records of the models the test needs; undecided: neither PaTH "
                   "nor a baseline reaches 90% (A5: in a majority of seeds at any depth tried; MQRAR-N: in any "
                   "pair)"))
    return tables


def state_tracking_report(runs: list[StoredRun], suites: dict, fmt: str):
    from rich.console import Group

    rendered = [render(header, rows, fmt, title, note) for title, header, rows, note in
                state_tracking_tables(runs, suites)]
    return Group(*rendered) if fmt == "terminal" else "\n".join(rendered)


def state_tracking_figure(records: list[ResultRecord], suites: dict):
    """Figure 2's panels: MQRAR-N accuracy against N; A5 token and sequence accuracy against depth at
    the trained length; where lengths were swept, A5 token accuracy against k at the deepest depth.
    One line per variant (the mean over seeds) with each seed's value as a dot; None where the
    records hold neither task."""
    import matplotlib.pyplot as plt

    located_records = [(record, None) for record in records]
    d = collect(located_records, suites, (a5_forms(located_records, suites) or ["product"])[0])
    lengths = sorted({length for _, length, _ in d.a5})
    deepest = max((depth for by_depth in d.a5.values() for depth in by_depth), default=None)
    panels = [("mqrar", None)] * bool(d.mqrar) + [("a5", m) for m in ("token_accuracy", "sequence_accuracy")
                                                  if any(k[1:] == (d.trained_length, m) for k in d.a5)]
    panels += [("a5_lengths", "token_accuracy")] * (len(lengths) > 1)
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 1.2, 3.4), constrained_layout=True,
                             squeeze=False)
    for axis, (family, metric) in zip(axes[0], panels):
        for index, variant in enumerate(VARIANTS):
            if family == "mqrar":
                points = {n: [seeds[s] for s in sorted(seeds)] for (v, n), seeds in d.mqrar.items() if v == variant}
            elif family == "a5":
                points = d.a5.get((variant, d.trained_length, metric), {})
            else:
                points = {length: d.a5[(variant, length, metric)][deepest] for length in lengths
                          if deepest in d.a5.get((variant, length, metric), {})}
            if not points:
                continue
            xs = sorted(points)
            color = f"C{index}"
            axis.plot(xs, [100 * sum(points[x]) / len(points[x]) for x in xs], marker="o", color=color,
                      label=variant if axis is axes[0][0] else None)
            for x in xs:
                axis.scatter([x] * len(points[x]), [100 * v for v in points[x]], s=8, color=color, alpha=0.4)
            axis.set_xticks(xs)
        axis.axhline(100 * THRESHOLD, color="0.6", linestyle=":", linewidth=1)
        axis.set_ylim(-3, 103)
        axis.grid(alpha=0.3)
        title, xlabel, ylabel = {
            "mqrar": ("MQRAR-N", "N (values back)", "token accuracy at queries (%)"),
            "a5": (f"A5 ({d.form}), k = {d.trained_length}", "layers", f"{(metric or '').replace('_', ' ')} (%)"),
            "a5_lengths": (f"A5 ({d.form}), {deepest} layers", "k (letters)", "token accuracy (%)")}[family]
        axis.set_title(title, fontsize=10)
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
    fig.legend(loc="outside right upper", fontsize=8)
    fig.supxlabel("line: mean over seeds; dots: each seed; dotted: 90%", fontsize=8)
    return fig
