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

from path_eval.reports.check import key_of, load_baseline, tolerance_names
from path_eval.results import ResultRecord, load_results
from training import run_cli

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
    widened, observed = retraining_tolerances(baseline, tolerances, [load_results(Path(p)) for p in args.retrain])
    derivation = {"method": f"per model and task, {MARGIN:g} x the largest baseline-vs-retrain difference, at least "
                            "the baseline's own tolerance", "baseline": args.baseline, "retrains": args.retrain,
                  "note": args.note, "observed": observed}
    Path(args.out).write_text(json.dumps({"tolerances": widened, "derivation": derivation}, indent=1) + "\n")
    for name, entry in widened.items():
        print(f"{name}: {entry}")


if __name__ == "__main__":
    run_cli(main)
