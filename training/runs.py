"""Collect zoo training runs (model cards and training logs) into one results file: each run's card
numbers and curve, and per task, variant and budget the mean and range over its runs.

A run is a training log `*.log` of `training.train` (one JSON line per logged step, the model
card as the last line) or a checkpoint folder's model_card.json. Language models report their final
training loss and the held-out loss at the training length; flip-flop models their error on the
large fixed evaluation sets (in, sparse, dense).

    python -m training.runs --run zoo=path_eval/zoo/models --run retrain1=LOGS1 --out FILE

A plan trained over several sessions adds each call's runs to its committed file with --extend FILE
(usually the --out too): the earlier runs are read from it, since their folders need not outlive the
session that trained them, and its commands are kept in `earlier_commands`.

An --out ending in .xz is written xz-compressed (a plan's curves run to hundreds of KB); the docs'
renderers read either.
"""
from __future__ import annotations

import argparse
import json
import lzma
import statistics
from pathlib import Path

from path_eval.errors import PathEvalError
from training import diagnostics, run_cli, tagging
from benchmarks.markdown import load, percent, source, table

SPLITS = ("in", "sparse", "dense")


def scores(card: dict) -> dict[str, float]:
    """The numbers a run is judged by: flip-flop error per split, a state-tracking diagnostic's held-out
    accuracies (token, sequence, final), or a language model's losses."""
    if card["task"] in ("a5", "mqrar"):
        return {metric: card["accuracy"][metric] for metric in tagging.METRICS}
    if card["task"] == "flipflop":
        return {split: card["flipflop_error"][split] for split in SPLITS}
    return {"final_training_loss": card["final_training_loss"], "heldout_loss": card["heldout"]["loss"]}


def read_log(path: Path) -> tuple[dict, list[dict]]:
    """(model card, curve) of one training log; the card is the last line."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    if not lines or "command" not in lines[-1]:
        raise PathEvalError(f"{path} does not end with a model card: give the log of a finished "
                            "`training.train` run")
    return lines[-1], curve_of(lines[:-1])


def curve_of(points: list[dict]) -> list[dict]:
    """Step, loss and (flip-flop) the error on the fixed sets, of the logged training steps."""
    return [{"step": point["step"], "loss": point["loss"],
             **({s: point["error"][s] for s in SPLITS} if isinstance(point.get("error"), dict) else {})}
            for point in points if "lr" in point]


def collect(label: str, folder: Path) -> list[dict]:
    """Every training run in a folder of logs or of checkpoints."""
    found = [(read_log(p), p.stem) for p in sorted(folder.glob("*.log")) if not p.stem.startswith("parity")]
    for card_path in sorted(folder.glob("*/model_card.json")):
        card = json.loads(card_path.read_text())
        found.append(((card, curve_of(card.get("curve", []))), card_path.parent.name))
    if not found:
        raise PathEvalError(f"no training runs in {folder}: give a folder of training logs or of checkpoints "
                            "with model_card.json")
    return [{"run": label, "name": name, "task": card["task"], "variant": card["variant"], "layers": card["layers"],
             "mqrar_n": card["data"]["n"] if card["task"] == "mqrar" else None,
             "batch": card["batch_windows"], "seed": card["seed"],
             "steps": card["steps"], "planned_steps": card["planned_steps"], "tokens": card["tokens"],
             "finished": not card["stopped_at_deadline"], "scores": scores(card),
             "wall_time_s": card.get("wall_time_s"),
             "steps_run": card.get("steps_run", "eager"),  # cards before --cuda-graphs ran every step eagerly
             "command": card["command"], "git_revision": card["git_revision"], "curve": curve}
            for (card, curve), name in found]


GROUP_FIELDS = ("task", "variant", "layers", "mqrar_n", "batch", "planned_steps", "finished")


def group_of(run_or_row: dict) -> tuple:
    """What a summary row shares with its runs (a run and its row carry these fields alike)."""
    return tuple(run_or_row.get(field) for field in GROUP_FIELDS)  # summaries before MQRAR have no mqrar_n


def late_loss(curve: list[dict]) -> str:
    """The training loss at the last logged step and its change over the last quarter of the steps
    ("-" without a curve): a loss still falling steeply at the end marks a model stopped while it
    learned, whose accuracy a longer budget may change; a flat one has converged or stalled."""
    if not curve:
        return "-"
    end = curve[-1]
    quarter_back = next(point for point in curve if point["step"] >= 0.75 * end["step"])
    return f"{end['loss']:.2f} ({end['loss'] - quarter_back['loss']:+.2f})"


def summarize(runs: list[dict]) -> list[dict]:
    """Mean, min and max of each score per task, variant, depth, MQRAR's N, batch, planned budget and
    whether the runs finished it (a run stopped at its deadline keeps its own group, with the steps it
    reached)."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault(group_of(run), []).append(run)
    return [{"task": task, "variant": variant, "layers": layers, "mqrar_n": n, "batch": batch,
             "planned_steps": planned, "finished": finished,
             "steps": [min(r["steps"] for r in group), max(r["steps"] for r in group)], "runs": len(group),
             "labels": [r["run"] for r in group], "seeds": [r["seed"] for r in group],
             "scores": {name: {"mean": statistics.fmean(r["scores"][name] for r in group),
                               "min": min(r["scores"][name] for r in group),
                               "max": max(r["scores"][name] for r in group)} for name in group[0]["scores"]}}
            for (task, variant, layers, n, batch, planned, finished), group in sorted(groups.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, metavar="LABEL=DIR",
                        help="a folder of training logs or checkpoints, and the label its runs get")
    parser.add_argument("--extend", metavar="FILE",
                        help="an earlier output of this script whose runs the new ones join")
    parser.add_argument("--machine", default="", help="where the runs trained (with --extend: every call's; "
                        "omitted, the earlier file's)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    earlier = extended(Path(args.extend)) if args.extend else {"runs": [], "earlier_commands": []}
    runs = list(earlier["runs"])
    for spec in args.run:
        label, sep, folder = spec.partition("=")
        if not sep or not Path(folder).is_dir():
            raise PathEvalError(f"--run {spec!r} is not LABEL=DIR with an existing DIR: give e.g. retrain1=logs/")
        runs += collect(label, Path(folder))
    seen: set[tuple[str, str]] = set()
    for run in runs:
        if (run["run"], run["name"]) in seen:
            raise PathEvalError(f"run {run['name']} of {run['run']!r} is given twice (in --extend's file or "
                                "two --run folders): give each call's folder once, under a label of its own")
        seen.add((run["run"], run["name"]))
    out = {"machine": args.machine or earlier.get("machine", ""), "command": "python -m training.runs " +
           (f"--extend {args.extend} " if args.extend else "") +
           " ".join(f"--run {spec}" for spec in args.run) + f" --out {args.out}",
           **({"earlier_commands": earlier["earlier_commands"]} if args.extend else {}),
           "summary": summarize(runs), "runs": runs}
    text = (json.dumps(out, indent=1) + "\n").encode()
    Path(args.out).write_bytes(lzma.compress(text) if args.out.endswith(".xz") else text)
    for row in out["summary"]:
        print(row["task"], row["variant"], row["layers"], row["mqrar_n"], row["planned_steps"], row["finished"], row["steps"], row["runs"],
              {name: round(value["mean"], 4) for name, value in row["scores"].items()})


def extended(path: Path) -> dict:
    """An earlier output's machine and runs, and every command that built it (its own last)."""
    if not path.is_file():
        raise PathEvalError(f"--extend {path}: no such file; give an earlier output of training.runs")
    data = load(path)
    if "runs" not in data or "command" not in data:
        raise PathEvalError(f"--extend {path} is not an output of training.runs (no runs or command)")
    return {"machine": data["machine"], "runs": data["runs"],
            "earlier_commands": [*data.get("earlier_commands", []), data["command"]]}


# ---------------------------------------------------------------- docs/zoo.md

# The PaTH paper's flip-flop errors (1 layer, 2 heads, trained on FFL(0.8)), in and sparse OOD.
PAPER_FLIPFLOP = {"rope": (0.069, 0.403), "path": (0.0, 0.000001)}


def spread(score: dict, fmt=percent) -> str:
    return f"{fmt(score['mean'])} [{fmt(score['min'])}, {fmt(score['max'])}]"


def render_training_runs(results: Path) -> str:
    """Every training run of the zoo's command (results/zoo/first_zoo/training_runs_h200.json, this
    script's output): flip-flop error and language-model losses as mean [min, max] over a group's runs."""
    path = results / "zoo" / "first_zoo" / "training_runs_h200.json"
    data = load(path)

    def budget(row):
        reached = row["steps"][0] if row["steps"][0] == row["steps"][1] else f"{row['steps'][0]}-{row['steps'][1]}"
        return str(reached) if row["finished"] else f"{reached} of {row['planned_steps']} (deadline)"

    def runs(row):
        return f"{row['runs']} ({', '.join(f'{label} s{seed}' for label, seed in zip(row['labels'], row['seeds']))})"

    flipflop, lm = [], []
    for row in data["summary"]:
        paper = PAPER_FLIPFLOP.get(row["variant"])
        if row["task"] == "flipflop":
            flipflop.append([row["variant"], budget(row), runs(row), *(spread(row["scores"][s]) for s in ("in", "sparse", "dense")),
                             *((percent(x) for x in paper) if paper else ("-", "-"))])
        else:
            lm.append([row["variant"], budget(row), runs(row), spread(row["scores"]["final_training_loss"], "{:.4f}".format),
                       spread(row["scores"]["heldout_loss"], "{:.4f}".format)])
    return "\n\n".join([
        f"From {source(path, results)}. Machine: {data['machine']}.",
        "Flip-flop error, mean [min, max] over runs, beside the paper's:",
        table(["model", "steps", "runs", "in (p=0.8)", "sparse (p=0.98)", "dense (p=0.1)", "paper in",
               "paper sparse"], flipflop),
        "Language models, mean [min, max] over runs:",
        table(["model", "steps", "runs", "final training loss", "held-out loss @512"], lm)])


# ---------------------------------------------------------------- docs/suites/state_tracking.md

def render_diagnostic_training(results: Path, trial_name: str | None, runs_name: str, task: str) -> str:
    """A diagnostic's training (results/state_tracking/trials/: the timing trial's line, where the
    calls ran one, and this script's output over the models trained): held-out accuracies by
    variant and depth (A5) or N (MQRAR-N), mean [min, max] over seeds."""
    runs_path = results / "state_tracking" / "trials" / runs_name
    data = load(runs_path)
    batches = " or ".join(sorted({str(row["batch"]) for row in data["summary"]}))
    column, key, held_out_set = {"a5": ("layers", "layers", "at k = 20 (4096 words)"),
                                 "mqrar": ("N", "mqrar_n", "(4096 sequences of 768 tokens)")}[task]

    def late_losses(row):
        runs = sorted((run for run in data["runs"] if group_of(run) == group_of(row)), key=lambda run: run["seed"])
        return ", ".join(f"s{run['seed']} {late_loss(run.get('curve', []))}" for run in runs)

    rows = [[row["variant"], str(row[key]), str(row["steps"][0]), str(row["runs"]),
             *(spread(row["scores"][name]) for name in tagging.METRICS), late_losses(row)]
            for row in data["summary"] if row["task"] == task]
    if trial_name is None:
        origin = f"From {source(runs_path, results)}. Machine: {data['machine']}."
        trial_line = "No timing trial: the calls fixed the budget (`STEPS`)."
    else:
        trial_path = results / "state_tracking" / "trials" / trial_name
        trial = load(trial_path)
        step = {"a5": f"{batches} words at depth 4", "mqrar": f"{batches} sequences of 768 tokens"}[task]
        steps = ", ".join(f"{key.split('/')[1]} {1000 * value:.0f} ms" for key, value in trial["step_s"].items())
        origin = f"From {source(trial_path, results)} and {source(runs_path, results)}. Machine: {data['machine']}."
        trial_line = (f"The timing trial: {trial['concurrent']} processes at once, {trial['trial_wall_s']} s from "
                      f"start to the last card (imports, compiling, {trial_steps(trial)}, the held-out evaluation); "
                      f"a step of {step}, each process among {trial['concurrent']}: {steps}.")
    return "\n\n".join([origin, trial_line,
                         f"Held-out accuracy {held_out_set} after the budget, mean [min, max] over seeds; "
                         "the training loss at the last step, and its change over the last quarter of the "
                         "steps, by seed (a steep fall: still learning when the budget ended):",
                         table(["variant", column, "steps", "seeds", "token", "sequence", "final",
                                "loss at the end (last quarter)"], rows)])


def trial_steps(trial: dict) -> str:
    """What a trial's processes trained: until a common deadline (`trial_s`), or, in the trials
    before it, 40 steps each."""
    return f"steps until {trial['trial_s']:g} s" if "trial_s" in trial else "40 steps"


def render_state_tracking_trials(results: Path) -> str:
    """The first A5 training, on the H200: 1100 steps of 256 words."""
    return render_diagnostic_training(results, "a5_trial_h200.json", "a5_1100_steps_h200.json", "a5")


def render_a5_1800_steps(results: Path) -> str:
    """An earlier budget's A5 models (1800 steps of 1024 words, an H100), which the recipe's replaced."""
    return render_diagnostic_training(results, "a5_trial_h100.json", "a5_1800_steps_h100.json", "a5")


def render_a5_4000_steps(results: Path) -> str:
    """The A5 models of the committed records, on an H100: the recipe's 4000 steps of 1024 words,
    a call per seed."""
    return render_diagnostic_training(results, None, "a5_4000_steps_h100.json.xz", "a5")


def render_mqrar_4000_steps(results: Path) -> str:
    """The MQRAR-N models at the recipe's 4000 steps of 64 sequences, a call per seed and N (every
    variant of it), and which of the plan's seeds and N are still to train."""
    runs_name = "mqrar_4000_steps.json.xz"
    trained = {(run["seed"], run["mqrar_n"]) for run in load(results / "state_tracking" / "trials" / runs_name)["runs"]
               if run["finished"]}
    plan = [(seed, n) for seed in diagnostics.SEEDS for n in diagnostics.MQRAR_NS]
    missing = [pair for pair in plan if pair not in trained]
    progress = (f"Trained so far: {len(plan) - len(missing)} of the plan's {len(plan)} (seed, N) calls"
                + (f"; still to train: {', '.join(f'seed {seed} N = {n}' for seed, n in missing)}." if missing else "."))
    return "\n\n".join([render_diagnostic_training(results, None, runs_name, "mqrar"), progress])


def render_mqrar_900_steps(results: Path) -> str:
    """The MQRAR-N models of the committed records, on an H100: 900 steps of 64 sequences."""
    return render_diagnostic_training(results, "mqrar_trial_h100.json", "mqrar_900_steps_h100.json", "mqrar")


if __name__ == "__main__":
    run_cli(main)
