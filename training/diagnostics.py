"""Every model of the state-tracking diagnostics (the `state_tracking` suite: A5 word problem,
MQRAR-N), trained on one GPU host by a few worker processes, each training its share of the models
one after another in-process (imports and compiled kernels reused; a small model leaves most of an
H200 idle, so the workers run at once).

The models, each variant (RoPE, FoX, PaTH, PaTH-FoX in fla's classes, `train.build_model`) with the
same budget, data law and seeds:

  a5_VARIANT_LDEPTH_sSEED   the A5 word problem, product form, k = 20; depths 1-4 at hidden 128
                            (2 heads of 64); seeds 0-2 (the statistic is the fewest layers reaching
                            90%: three seeds, so one lucky seed decides nothing)
  mqrarN_VARIANT_sSEED      MQRAR-N, N = 1-4, 32 pairs, length 768; 2 layers, hidden 256, 2 heads
                            (the PaTH paper's shape); seeds 0-2

`plan` lists them with their commands; `trial` times steps of each task and variant, as many
processes at once as the training will run, and says what the whole plan would take with W workers
(run it first on a fresh host: eight trainings at once once ran past their deadline); `train` trains
the plan (or a part: --only, --seeds, --ns), W workers, each model's folder under OUT with its card, with
the recipe's steps, or (--fit TRIAL) the recipe's scaled down by one factor to fit a time budget, or
(--steps N) N for every model, so every variant keeps the same budget. A model that does not finish
its steps before --deadline-s stops and says so in its card (`stopped_at_deadline`), never
silently. With --pause-after N each model pauses after N steps in a call and the same command goes
on from there on the same host (MQRAR's 4000 steps take about 20 minutes a seed, a call 10).

    python -m training.diagnostics trial --workers 12
    python -m training.diagnostics train --workers 12 --out /tmp/diag --revision "$(git rev-parse --short HEAD)"
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

from path_eval.errors import PathEvalError
from training import run_cli
from training.train import VARIANTS

A5_DEPTHS = (1, 2, 3, 4)
MQRAR_NS = (1, 2, 3, 4)
SEEDS = (0, 1, 2)
# The recipe (the same for every variant): steps, batch (sequences) and peak learning rate per task;
# AdamW, warmup 3%, cosine to a tenth, weight decay 0.1, clip 1 (train.py). A5's batch is 1024 words:
# 1100 steps of 256 taught no model past the second letter, and a step of these small models is
# bound by launching kernels (16 processes at once: 28-48 ms a step each, for a few GFLOP), so more
# words a step cost far less than more steps; the trial measures what they cost.
# Every step replays its forward and backward from CUDA graphs (train.py --cuda-graphs; eager where
# capturing fails, as the card says): A5's steps are bound by launching kernels, which a replay
# removes; MQRAR's by their arithmetic (64 x 768 tokens at head dim 128: about 0.27 s a step among
# 16 processes, replayed or eager), so its budget is what a call can afford.
RECIPE = {"a5": {"steps": 4000, "batch": 1024, "lr": 1e-3}, "mqrar": {"steps": 4000, "batch": 64, "lr": 1e-3}}


@dataclass(frozen=True)
class Planned:
    name: str
    task: str
    variant: str
    seed: int
    options: dict  # train.py's task options (--layers, --mqrar-n)

    def arguments(self, out: Path, revision: str, steps: int | None = None, deadline_s: float | None = None,
                  heads: int | None = None, pause_after: int | None = None) -> list[str]:
        recipe = RECIPE[self.task]
        words = ["--variant", self.variant, "--task", self.task, "--seed", str(self.seed),
                 "--steps", str(steps or recipe["steps"]), "--batch", str(recipe["batch"]), "--lr", str(recipe["lr"]),
                 "--eval-every", "1000", "--log-every", "100", "--revision", revision, "--out", str(out / self.name),
                 "--cuda-graphs"]
        for key, value in self.options.items():
            words += [f"--{key.replace('_', '-')}", str(value)]
        return words + (["--deadline-s", str(deadline_s)] if deadline_s else []) + \
            (["--heads", str(heads)] if heads else []) + (["--pause-after", str(pause_after)] if pause_after else [])


def plan(only: str | None = None, seeds: tuple[int, ...] = SEEDS, ns: tuple[int, ...] = MQRAR_NS) -> list[Planned]:
    """The models, or one task's (`only`), some seeds' and some MQRAR-N's (`ns`): a call holds every
    variant of what it trains, so that calls of one fixed --steps compare."""
    models = [Planned(f"a5_{v}_L{depth}_s{seed}", "a5", v, seed, {"layers": depth})
              for depth in A5_DEPTHS for seed in SEEDS for v in VARIANTS]
    models += [Planned(f"mqrar{n}_{v}_s{seed}", "mqrar", v, seed, {"mqrar_n": n})
               for n in MQRAR_NS for seed in SEEDS for v in VARIANTS]
    return [m for m in models if only in (None, m.task) and m.seed in seeds
            and (m.task != "mqrar" or m.options["mqrar_n"] in ns)]


def subset(choices: tuple[int, ...], what: str):
    """An argparse type: a comma-separated subset of `choices` (--seeds, --ns)."""
    def parse(text: str) -> tuple[int, ...]:
        try:
            chosen = tuple(sorted({int(word) for word in text.split(",")}))
        except ValueError:
            chosen = ()
        if not chosen or not set(chosen) <= set(choices):
            raise argparse.ArgumentTypeError(f"{text!r}: give {what} among {','.join(map(str, choices))}, comma-separated")
        return chosen
    return parse


def train_share(share: list[list[str]], log: Path) -> None:
    """One worker: its models one after another, in this process. With --pause-after, a model whose
    card is saved and which holds no paused state is done: a later call passes it over, and one
    paused goes on (`train.train`)."""
    from training.train import RESUME_FILE, parser, train

    failed = []
    with open(log, "a") as stream:
        import contextlib

        with contextlib.redirect_stdout(stream):
            for words in share:
                started, args = time.time(), parser().parse_args(words)
                out = Path(args.out)
                if args.pause_after and finished_under(out, args) and not (out / RESUME_FILE).is_file():
                    print(json.dumps({"already_trained": str(out)}), flush=True)
                    continue
                try:
                    finished = train(args)
                except PathEvalError as error:  # the deadline, say: the rest of the share still gets its turn
                    print(json.dumps({"not_trained": str(out), "error": str(error)}), flush=True)
                    failed.append(str(out))
                    continue
                print(json.dumps({"trained" if finished else "paused": str(out),
                                  "wall_s": round(time.time() - started, 1)}), flush=True)
    if failed:
        raise SystemExit(f"not trained: {', '.join(failed)} (see {log})")


def finished_under(out: Path, args) -> bool:
    """Whether `out` holds a card of this schedule (an earlier call's model of other steps, seed or
    learning rate, left on a warm host, is trained again)."""
    card_path = out / "model_card.json"
    if not card_path.is_file():
        return False
    card = json.loads(card_path.read_text())
    return (card.get("variant"), card.get("planned_steps"), card.get("seed"), card.get("lr_schedule", {}).get("peak")) \
        == (args.variant, args.steps, args.seed, args.lr) and not card.get("stopped_at_deadline")


def run_workers(shares: list[list[list[str]]], logs: Path) -> None:
    """The shares in worker processes at once (spawned: each its own CUDA context)."""
    logs.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=train_share, args=(share, logs / f"worker{i}.log"))
               for i, share in enumerate(shares) if share]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    failed = [i for i, worker in enumerate(workers) if worker.exitcode != 0]
    if failed:
        raise SystemExit(f"workers {failed} failed: see {logs}/worker*.log")


def model_cost(trial: dict | None, model: Planned) -> float:
    """A model's projected seconds at the recipe's steps: the trial's step time for its task and
    variant, or the recipe's steps alone (a relative cost) without a trial."""
    step_s = trial["step_s"][f"{model.task}/{model.variant}"] if trial else 1.0
    return step_s * RECIPE[model.task]["steps"]


def deal(models: list[Planned], workers: int, trial: dict | None = None) -> list[list[Planned]]:
    """Longest first, each model to the worker with the least work so far: the shares end together,
    so no variant's models (PaTH's steps are the slowest) run past a deadline the others meet."""
    shares: list[list[Planned]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for model in sorted(models, key=lambda m: -model_cost(trial, m)):
        worker = loads.index(min(loads))
        shares[worker].append(model)
        loads[worker] += model_cost(trial, model)
    return shares


def fitted_steps(trial: dict, models: list[Planned], workers: int, seconds: float) -> dict[str, int]:
    """Each task's steps, the recipe's scaled by one factor for every task (never up) so that the
    busiest worker's projected time fits `seconds`: every variant keeps one budget."""
    busiest = max((sum(model_cost(trial, m) for m in share) for share in deal(models, workers, trial)), default=0.0)
    factor = min(1.0, seconds / busiest) if busiest else 1.0
    return {task: max(100, int(recipe["steps"] * factor) // 100 * 100) for task, recipe in RECIPE.items()}


def trial_probes(models: list[Planned]) -> list[Planned]:
    """One model of each task and variant among `models` to time: A5's deepest, MQRAR-N's smallest N
    (its steps cost the same at every N), of the smallest seed."""
    seed = min(m.seed for m in models)
    deepest = max((m.options["layers"] for m in models if m.task == "a5"), default=None)
    smallest = min((m.options["mqrar_n"] for m in models if m.task == "mqrar"), default=None)
    return [m for m in models if m.seed == seed and (m.options.get("layers") == deepest if m.task == "a5"
                                                     else m.options["mqrar_n"] == smallest)]


def trial_step_s(cards: list[tuple[str, str, dict]], trial_s: float) -> dict[tuple[str, str], float]:
    """Seconds a step per (task, variant): the mean over its replicas' cards of the steady steps'
    time (the card's throughput, from step 21 on)."""
    measured: dict[tuple[str, str], list[float]] = {}
    for task, variant, card in cards:
        if not card["tokens_per_s"]:
            raise PathEvalError(f"a {task}/{variant} trial process took {card['steps']} steps before --trial-s "
                                f"{trial_s:g}, too few to time (from step 21 on): give a longer --trial-s")
        measured.setdefault((task, variant), []).append(
            card["batch_windows"] * card["training_length"] / card["tokens_per_s"])
    return {key: sum(times) / len(times) for key, times in measured.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("plan", "trial", "train"))
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--only", choices=tuple(RECIPE), help="train one task's models alone")
    parser.add_argument("--seeds", type=subset(SEEDS, "seeds"), default=SEEDS,
                        help="these seeds' models alone, comma-separated (every variant and depth of each)")
    parser.add_argument("--ns", type=subset(MQRAR_NS, "MQRAR's N"), default=MQRAR_NS,
                        help="these MQRAR-N models alone, comma-separated (every variant of each; A5's unaffected): "
                             "a call small enough to finish its models, where a seed's take longer than a call")
    parser.add_argument("--steps", type=int, default=None,
                        help="train: every model this many steps, in place of --fit's scaled recipe (one budget "
                             "for calls that each train some seeds)")
    parser.add_argument("--pause-after", type=int, default=None,
                        help="train: each model pauses after this many steps in a process (its state in its folder) "
                             "and the same command goes on from there: a budget longer than one device call")
    parser.add_argument("--out", default="/tmp/diagnostics")
    parser.add_argument("--revision", default="unknown")
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="each model stops (and says so in its card) once its process has run this long")
    parser.add_argument("--trial-s", type=float, default=60.0,
                        help="trial: each process trains until it has run this long, all stopping together")
    parser.add_argument("--fit", metavar="TRIAL_JSON",
                        help="train: scale every task's steps by one factor so that the plan fits --fit-s by the "
                             "trial's step times (the JSON line `trial` printed)")
    parser.add_argument("--fit-s", type=float, default=420.0)
    parser.add_argument("--mqrar-heads", type=int, default=2,
                        help="MQRAR's heads at hidden 256 (the paper's 2, head dim 128; 4 if fla's PaTH kernel "
                             "refuses head dim 128: a departure, in every MQRAR card)")
    args = parser.parse_args()
    if args.steps and args.fit:
        parser.error("--steps and --fit both set the steps: give one")
    if args.pause_after and not args.steps:
        parser.error("--pause-after needs --steps: a fitted budget changes from call to call, a paused model's may not")
    out = Path(args.out)
    models = plan(args.only, args.seeds, args.ns)

    def heads(model: Planned) -> int | None:
        return args.mqrar_heads if model.task == "mqrar" and args.mqrar_heads != 2 else None
    if args.command == "plan":
        for model in models:
            print(model.name, "python -m training.train " + " ".join(model.arguments(out, args.revision, steps=args.steps)))
        return
    if args.command == "trial":
        # One model of each task and variant (the deepest A5), repeated to as many processes at once
        # as the training's workers, each training until --trial-s: all stop together, so every
        # timed step (from step 21 on, the card's throughput; the first compile the kernels) is
        # taken under the training's contention (the GPU time-sliced between processes). A fixed
        # number of steps instead let the quick-starting processes time theirs while the others were
        # still compiling: MQRAR's trial on an H100 read 0.07 s a step where the training took 0.26.
        probes = trial_probes(models)
        replicas = [probes[i % len(probes)] for i in range(max(len(probes), args.workers))]
        started = time.time()
        quiet = ["--eval-every", str(10 ** 9), "--final-eval", "256"]  # no evaluation among the timed steps
        run_workers([[p.arguments(out / "trial" / f"r{i}", args.revision, deadline_s=args.trial_s, heads=heads(p))
                      + quiet] for i, p in enumerate(replicas)],
                    out / "trial" / "logs")
        step_s = trial_step_s([(p.task, p.variant, json.loads((out / "trial" / f"r{i}" / p.name / "model_card.json")
                                                             .read_text())) for i, p in enumerate(replicas)],
                              args.trial_s)
        total = sum(step_s[(m.task, m.variant)] * (args.steps or RECIPE[m.task]["steps"]) for m in models)
        print(json.dumps({"trial_wall_s": round(time.time() - started, 1), "trial_s": args.trial_s,
                          "concurrent": len(replicas),
                          "step_s": {f"{t}/{v}": round(s, 4) for (t, v), s in step_s.items()},
                          "serial_s": round(total), "projected_s_with_workers": round(total / args.workers)}))
        return
    steps = {task: args.steps or recipe["steps"] for task, recipe in RECIPE.items()}
    trial = json.loads(Path(args.fit).read_text()) if args.fit else None
    if trial:
        steps = fitted_steps(trial, models, args.workers, args.fit_s)
    print(json.dumps({"steps": steps, "models": len(models), "workers": args.workers}), flush=True)
    run_workers([[m.arguments(out, args.revision, steps=steps[m.task], deadline_s=args.deadline_s, heads=heads(m),
                              pause_after=args.pause_after)
                  for m in share] for share in deal(models, args.workers, trial)], out / "logs")

if __name__ == "__main__":
    run_cli(main)
