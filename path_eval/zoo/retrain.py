"""Tolerances for judging a retrained zoo against the ci baseline.

Retraining is not bit-exact: fla's PaTH backward kernels accumulate gradients with float atomics,
the Llama's embedding and attention backward on CUDA do too, and Triton's autotuner may pick
another kernel configuration per process, so the same command, seed and data give slightly
different weights, and after hundreds of steps those differences are as large as the training
itself makes them. The baseline's own tolerances cover evaluation drift of fixed checkpoints
(CPU against GPU: 5e-4 relative for perplexity) and are far too tight for that.

From one measured retrain, each of the baseline's tolerance entries gets a retraining tolerance:
twice the largest difference, over the records the entry governs, between the baseline and the
retrain (relative where the entry is relative, absolute where it is absolute), and never below the
entry itself. Another retrain, which the derivation never saw, then tests the result.

    python -m path_eval.zoo.retrain --baseline results/ci/baseline.json \\
        --retrain runs/ci_retrain/results.json --out results/ci/retrain_tolerances.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from path_eval.reports.check import key_of, load_baseline
from path_eval.results import ResultRecord, load_results
from path_eval.zoo import run_cli

MARGIN = 2.0


def governing_entry(record: ResultRecord, tolerances: dict) -> str | None:
    """The tolerance entry `check` would apply to this record (task/metric first, then metric)."""
    for name in (f"{record.task}/{record.metric}", record.metric):
        if name in tolerances:
            return name
    return None


def retraining_tolerances(baseline: list[ResultRecord], tolerances: dict,
                          retrain: list[ResultRecord]) -> tuple[dict, dict]:
    """(tolerances, observed): each entry widened to MARGIN x the largest baseline-retrain difference
    it governs, and the largest differences themselves with the record that showed them."""
    by_key = {key_of(r): r for r in retrain}
    observed: dict[str, dict] = {}
    for base in baseline:
        name = governing_entry(base, tolerances)
        now = by_key.get(key_of(base))
        if name is None or now is None:
            continue
        kind = "rel" if "rel" in tolerances[name] else "abs"
        diff = abs(now.value - base.value)
        if kind == "rel":
            diff = diff / abs(base.value) if base.value else float("inf") if diff else 0.0
        if name not in observed or diff > observed[name]["largest"]:
            observed[name] = {"kind": kind, "largest": diff, "at": " ".join(map(str, filter(None, key_of(base))))}
    widened = {}
    for name, entry in tolerances.items():
        widened[name] = dict(entry)
        if name in observed:
            kind = observed[name]["kind"]
            widened[name][kind] = max(entry.get(kind, 0.0), MARGIN * observed[name]["largest"])
    return widened, observed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the ci baseline ({tolerances, records})")
    parser.add_argument("--retrain", required=True, help="results.json of the ci suite on a retrained zoo")
    parser.add_argument("--out", required=True, help="where to write {tolerances, derivation}")
    parser.add_argument("--note", default="", help="where the retrained models came from (the command)")
    args = parser.parse_args()
    baseline, tolerances = load_baseline(Path(args.baseline))
    widened, observed = retraining_tolerances(baseline, tolerances, load_results(Path(args.retrain)))
    derivation = {"method": f"{MARGIN:g} x the largest baseline-vs-retrain difference each entry governs, at least "
                            "the baseline's own tolerance", "baseline": args.baseline, "retrain": args.retrain,
                  "note": args.note, "observed": observed}
    Path(args.out).write_text(json.dumps({"tolerances": widened, "derivation": derivation}, indent=1) + "\n")
    for name, entry in widened.items():
        print(f"{name}: {entry}")


if __name__ == "__main__":
    run_cli(main)
