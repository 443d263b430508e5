"""Tolerances for judging a retrained zoo against the ci baseline.

Retraining is not bit-exact: fla's PaTH backward kernels accumulate gradients with float atomics,
the Llama's embedding and attention backward on CUDA do too, and Triton's autotuner may pick
another kernel configuration per process, so the same command, seed and data give slightly
different weights, and after hundreds of steps those differences are as large as the training
itself makes them. The baseline's own tolerances cover evaluation drift of fixed checkpoints
(CPU against GPU: 5e-4 relative for perplexity) and are far too tight for that.

From measured retrains, each of the baseline's tolerance entries gets a retraining tolerance for
every model and task it governs (`model/task/metric`, which `check` looks up first): twice the
largest difference between the baseline and any retrain over that model's records (relative where
the entry is relative, absolute where absolute), never below the entry itself. Per model, because
one model's training can be far noisier than the others' (RoPE's flip-flop model leaves a plateau
near the end of its budget at a step that varies run to run), and one wide entry would blunt the
check for all. A retrain the derivation never saw then tests the result.

    python -m training.retrain --baseline results/ci/baseline.json \\
        --retrain runs/ci_retrain1/results.json --retrain runs/ci_retrain2/results.json \\
        --out results/ci/retrain_tolerances.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.reports.check import key_of, load_baseline, tolerance_names
from path_eval.results import ResultRecord, load_records
from training import run_cli
from benchmarks.markdown import kilo, load, percent, source, table
from training.runs import PAPER_FLIPFLOP
from training.train import VARIANTS

MARGIN = 2.0


def governing_entry(record: ResultRecord, tolerances: dict) -> str | None:
    """The baseline's tolerance entry `check` would apply to this record."""
    return next((name for name in tolerance_names(record)[1:] if name in tolerances), None)


def retraining_tolerances(baseline: list[ResultRecord], tolerances: dict,
                          retrains: list[list[ResultRecord]]) -> tuple[dict, dict]:
    """(tolerances, observed): the baseline's entries, plus one model/task/metric entry per model and
    task an entry governs, widened to MARGIN x the largest baseline-vs-retrain difference over its
    records; `observed` holds those differences and the record that showed each."""
    observed: dict[str, dict] = {}
    for retrain in retrains:
        by_key = {key_of(r): r for r in retrain}
        for base in baseline:
            entry, now = governing_entry(base, tolerances), by_key.get(key_of(base))
            if entry is None or now is None:
                continue
            kind = "rel" if "rel" in tolerances[entry] else "abs"
            diff = abs(now.value - base.value)
            if kind == "rel":
                diff = diff / abs(base.value) if base.value else float("inf") if diff else 0.0
            name = tolerance_names(base)[0]
            if name not in observed or diff > observed[name]["largest"]:
                observed[name] = {"entry": entry, "kind": kind, "largest": diff,
                                  "at": " ".join(map(str, filter(None, key_of(base))))}
    widened = {name: dict(entry) for name, entry in tolerances.items()}
    for name, seen in sorted(observed.items()):
        entry = tolerances[seen["entry"]]
        if MARGIN * seen["largest"] > entry.get(seen["kind"], 0.0):  # else the baseline's entry already covers it
            widened[name] = entry | {seen["kind"]: MARGIN * seen["largest"]}
    return widened, observed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the ci baseline ({tolerances, records})")
    parser.add_argument("--retrain", action="append", required=True,
                        help="results.json of the ci suite on a retrained zoo (repeat for several retrains)")
    parser.add_argument("--out", required=True, help="where to write {tolerances, derivation}")
    parser.add_argument("--note", default="", help="where the retrained models came from (the command)")
    args = parser.parse_args()
    baseline, tolerances = load_baseline(Path(args.baseline))
    widened, observed = retraining_tolerances(baseline, tolerances, [load_records(Path(p)) for p in args.retrain])
    derivation = {"method": f"per model and task, {MARGIN:g} x the largest baseline-vs-retrain difference, at least "
                            "the baseline's own tolerance", "baseline": args.baseline, "retrains": args.retrain,
                  "note": args.note, "observed": observed}
    Path(args.out).write_text(json.dumps({"tolerances": widened, "derivation": derivation}, indent=1) + "\n")
    for name, entry in widened.items():
        print(f"{name}: {entry}")


# ---------------------------------------------------------------- docs/zoo.md

FLIPFLOP_SPLITS = ("flipflop_in", "flipflop_sparse", "flipflop_dense")


def render_baseline(results: Path) -> str:
    """The ci suite's committed baseline over the zoo (results/ci/baseline.json, the records every
    retrain is checked against): retrieval at 1x and 2x the language models' training length,
    held-out perplexity by position, flip-flop error beside the paper's."""
    data = load(results / "ci" / "baseline.json")
    value = {(r["model"], r["task"], r["length"], tuple(r["bucket"] or ())): r for r in data["records"]}
    flipflop_rows = []
    for variant in VARIANTS:
        ours = [value[f"flipflop_{variant}", task, 512, ()] for task in FLIPFLOP_SPLITS]
        paper = PAPER_FLIPFLOP.get(variant)
        flipflop_rows.append([variant, *(f"{percent(r['value'])} ({r['n']})" for r in ours),
                              *((percent(x) for x in paper) if paper else ("-", "-"))])
    retrieval_cells = [(task, length) for task in ("niah_single_1", "niah_multikey_2", "phonebook")
                       for length in sorted({r["length"] for r in data["records"] if r["task"] == task})]
    retrieval_rows = [[variant, *(f"{100 * value[variant, task, length, ()]['value']:.0f}%"
                                  for task, length in retrieval_cells)] for variant in VARIANTS]
    samples = value["rope", "niah_single_1", 1024, ()]["n"]
    heldout = [r for r in data["records"] if r["task"] == "heldout" and r["length"] == 4096 and r["bucket"]]
    buckets = sorted({tuple(r["bucket"]) for r in heldout})
    ppl_rows = [[variant, f"{value[variant, 'heldout', 1024, ()]['value']:.1f}",
                 *(f"{value[variant, 'heldout', 4096, b]['value']:.1f}" for b in buckets)] for variant in VARIANTS]
    blocks = value["rope", "heldout", 4096, ()]["n"]
    return "\n\n".join([
        f"Retrieval ({samples} samples per length; language models trained at 1024):",
        table(["model", *(f"{task} @{kilo(length)}" for task, length in retrieval_cells)], retrieval_rows),
        f"Held-out perplexity: whole 1024 blocks, and by position in {blocks} blocks of 4096:",
        table(["model", "@1K", *(f"@4K {a}-{b}" for a, b in buckets)], ppl_rows),
        "Flip-flop error (share of reads wrong; sequences in brackets; length 512) beside the paper's:",
        table(["model", "in (p=0.8)", "sparse (p=0.98)", "dense (p=0.1)", "paper in", "paper sparse"], flipflop_rows)])


def render_zoo_retrain(results: Path) -> str:
    """The retrain checks of the zoo's language models (results/zoo/retrain/index.json): each check's
    ci records against the baseline it names, under that baseline's tolerances and under each
    retraining tolerance file the check names (files committed before its records were made)."""
    from path_eval.reports.check import check, load_baseline, load_tolerances

    index = load(results / "zoo" / "retrain" / "index.json")
    root = results.parent
    files = index["retraining_tolerances"]
    rows = []
    for entry in index["checks"]:
        baseline, tolerances = load_baseline(root / entry["baseline"])
        current, _ = load_baseline(root / entry["records"])  # a results.json, or the records of a baseline file
        ran = {r.model for r in current}  # a model added to the zoo after the retrain has no record in it
        mine = [r for r in baseline if r.model in ran]
        cells, beyond = [], {}
        for name in [None, *files]:
            if name is not None and name not in entry["tolerances"]:
                cells.append("- (derived from these records)")
                continue
            findings, problems, _ = check(current, mine, tolerances if name is None else
                                          load_tolerances(root / files[name], baseline))
            if problems:
                raise PathEvalError(f"{entry['records']} is not comparable with {entry['baseline']}: {problems[0]}")
            cells.append(f"{sum(f.regressed for f in findings)} of {len(findings)}")
            if name is not None:
                beyond |= {" ".join(map(str, filter(None, f.key))): f"({f.value:.4g} vs {f.baseline:.4g})"
                           for f in findings if f.regressed}
        rows.append([entry["label"], source(root / entry["records"], results), source(root / entry["baseline"], results),
                     *cells, "; ".join(f"{key} {values}" for key, values in beyond.items()) or "none"])
    notes = [f"- {entry['label']}: {entry['note']}" for entry in index["checks"]]
    return "\n\n".join([
        f"From {source(results / 'zoo' / 'retrain' / 'index.json', results)}; a cell counts the records beyond "
        "the tolerances its column names ('which': those beyond a retraining tolerance file):",
        table(["check", "records", "against", "beyond the baseline's tolerances",
               *(f"beyond {source(root / path, results)}" for path in files.values()), "which"],
              rows),
        "\n".join(notes)])


def render_first_retrains(results: Path) -> str:
    """The first zoo's retrains' ci records (results/zoo/first_zoo/retrain_h200.json and the files it
    names) checked against the baseline: under the baseline's tolerances, and under the retraining
    tolerances in force when each retrain was evaluated (derived from earlier retrains only); then
    the per-model tolerances from every retrain, for the next one."""
    from path_eval.reports.check import check, load_baseline, load_tolerances
    from path_eval.results import load_records

    root = results.parent
    index = load(results / "zoo" / "first_zoo" / "retrain_h200.json")
    baseline, tolerances = load_baseline(root / index["baseline"])
    files = index["retraining_tolerances"]
    rows = []
    for retrain in index["retrains"]:
        current = load_records(root / retrain["records"])
        in_force = retrain["tested_against"]
        verdicts = []
        for tol in [tolerances] + ([load_tolerances(root / files[in_force], baseline)] if in_force else []):
            findings, problems, _ = check(current, baseline, tol)
            if problems:
                raise PathEvalError(f"{retrain['records']} is not comparable with the baseline: {problems[0]}")
            verdicts.append(findings)
        failed = [" ".join(map(str, filter(None, f.key))) + f" ({f.value:.4g} vs {f.baseline:.4g})"
                  for f in verdicts[-1] if f.regressed] if in_force else []
        rows.append([retrain["label"], f"{sum(f.regressed for f in verdicts[0])} of {len(verdicts[0])}",
                     source(root / files[in_force], results) if in_force else "none (it derived the first)",
                     f"{sum(f.regressed for f in verdicts[-1])} of {len(verdicts[-1])}" if in_force else "-",
                     "; ".join(failed) or ("none" if in_force else "-")])
    first = load_tolerances(root / files["from_retrain1"], baseline)
    first_observed = load(root / files["from_retrain1"])["derivation"]["observed"]
    first_rows = [[name, json.dumps(tolerances[name]), json.dumps(rounded(first[name])),
                   f"{first_observed[name]['largest']:.4g} ({first_observed[name]['at']})"
                   if name in first_observed else "-"] for name in tolerances]
    latest = load(root / files["current"])
    current_rows = [[name, json.dumps(rounded(entry)),
                     f"{latest['derivation']['observed'][name]['largest']:.4g}"
                     f" ({latest['derivation']['observed'][name]['at']})"]
                    for name, entry in latest["tolerances"].items() if name not in tolerances]
    derived_from = ", ".join(Path(p).name.removesuffix(".xz").removesuffix(".json").removeprefix("ci_") for p in latest["derivation"]["retrains"])
    return "\n\n".join([
        f"From {source(results / 'zoo' / 'first_zoo' / 'retrain_h200.json', results)} and the files it names.",
        f"Retraining tolerances derived from retrain1 alone ({source(root / files['from_retrain1'], results)}):",
        table(["entry", "baseline tolerance", "from retrain1", "largest retrain1 difference"], first_rows),
        "Each retrain's ci records against the baseline:",
        table(["retrain", "regressed, baseline tolerances", "retraining tolerances in force", "regressed under them",
               "beyond them"], rows),
        f"For the next retrain, {source(root / files['current'], results)} ({latest['derivation']['method']}; from "
        f"{derived_from}). Entries beyond the baseline's, which `check` looks up first for that model:",
        table(["entry", "tolerance", "largest difference (where)"], current_rows)])


def rounded(entry: dict) -> dict:
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in entry.items()}


if __name__ == "__main__":
    run_cli(main)
