"""Equal budgets for models that train at once on one GPU, each in its own process (the zoo's four
variants and their retrain replicas): every member times a few steps while all the others time theirs
(the GPU shared as it will be in training), then every member trains the same number of steps, the
most that the slowest fits in the time it has left. A deadline alone stops each model where its own
speed left it (the first zoo: PaTH 1,819 and PaTH-FoX 1,680 of 2,000 steps), so the variants would
see different tokens; agreeing first keeps one budget and one schedule for all of them.

The members meet through files in one folder (a barrier before timing, so that every member times
under the same contention, and one file of measurements each); every member reads the same files
and applies the same rule, so all arrive at the same number without a coordinator. A member that
fails before agreeing withdraws (`withdraw`) so that the others agree without it instead of waiting
for it until their deadline.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Callable

from path_eval.atomic_files import write_json_atomic  # a member polling the folder never reads half a file
from path_eval.errors import PathEvalError

MARGIN = 0.1  # of the time left: the optimizer step, loading windows and the final evaluation are not timed
GRANULARITY = 100  # steps are agreed in hundreds (the logs' and curves' interval), fewer only when fewer fit


def agreed_steps(measurements: dict[str, dict], cap: int, margin: float = MARGIN,
                 granularity: int = GRANULARITY) -> int:
    """The rule: `cap` where every member fits it in (1 - margin) of its seconds left at its step
    time; else the fewest steps any member fits, rounded down to a multiple of `granularity` where at
    least that many fit."""
    fits = min(math.floor(m["seconds_left"] * (1 - margin) / m["step_s"]) for m in measurements.values())
    steps = cap if fits >= cap else fits // granularity * granularity if fits >= granularity else fits
    if steps < 1:
        slowest = max(measurements, key=lambda name: measurements[name]["step_s"] / measurements[name]["seconds_left"])
        raise PathEvalError(f"no training step fits the time left: {slowest} needs {measurements[slowest]['step_s']:.2f} "
                            f"s a step with {measurements[slowest]['seconds_left']:.0f} s left; give a later deadline")
    return steps


def agree(folder: Path, name: str, members: int, cap: int, time_step: Callable[[], float],
          seconds_left: Callable[[], float], poll_s: float = 0.2) -> dict:
    """Meet the other members in `folder` (`members` in all, each with its own `name`), time steps
    (`time_step`: seconds a step) once all are there, and return the agreement: the steps every
    member trains and what each measured. A member missing when `seconds_left` runs out stops this
    one with the names of those that arrived."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic({}, folder / f"{name}.ready")
    _wait(folder, ".ready", members, seconds_left, poll_s)
    write_json_atomic({"step_s": time_step(), "seconds_left": seconds_left()}, folder / f"{name}.json")
    measured = _wait(folder, ".json", members, seconds_left, poll_s)
    measurements = {member: json.loads((folder / f"{member}.json").read_text()) for member in measured}
    withdrawn = sorted(_names(folder, ".withdrawn") - set(measurements))
    return {"steps": agreed_steps(measurements, cap), "cap": cap, "margin": MARGIN, "members": measurements,
            "withdrawn": withdrawn}


def withdraw(folder: Path, name: str) -> None:
    """Say that this member will not agree (it failed): the others count it as there and leave it out."""
    if folder.is_dir():
        write_json_atomic({}, folder / f"{name}.withdrawn")


def _names(folder: Path, suffix: str) -> set[str]:
    return {path.name.removesuffix(suffix) for path in folder.glob(f"*{suffix}")}


def _wait(folder: Path, suffix: str, members: int, seconds_left: Callable[[], float], poll_s: float) -> list[str]:
    """The members that wrote `suffix` files once every member has written one or withdrawn."""
    while True:
        arrived, withdrawn = _names(folder, suffix), _names(folder, ".withdrawn")
        if len(arrived | withdrawn) > members:
            raise PathEvalError(f"{folder} holds {len(arrived | withdrawn)} members' files for {members} members: "
                                "give each run a fresh agreement folder")
        if len(arrived | withdrawn) == members:
            if not arrived - withdrawn:
                raise PathEvalError(f"every member of {folder} withdrew: see their logs")
            return sorted(arrived)
        if seconds_left() <= 0:
            raise PathEvalError(f"only {len(arrived)} of {members} members reached {folder} before the deadline "
                                f"(arrived: {', '.join(sorted(arrived)) or 'none'}): see the others' logs")
        time.sleep(poll_s)
