"""Equal budgets by agreement (training/agreement.py): the rule against a brute-force search of its
definition, the meeting of members in threads (each times only once all are there, all leave with
the same steps), a member missing or a folder reused, and train.py's models agreeing on the CPU."""
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from path_eval.errors import PathEvalError
from training.agreement import GRANULARITY, MARGIN, agree, agreed_steps

REPOSITORY = Path(__file__).resolve().parents[2]


def brute_force_steps(measurements: dict, cap: int) -> int:
    """cap where every member fits it in (1 - MARGIN) of its time left; else the largest step count
    that every member fits, a multiple of GRANULARITY unless not even GRANULARITY steps fit."""
    def fits(steps):
        return all(steps * m["step_s"] <= m["seconds_left"] * (1 - MARGIN) for m in measurements.values())
    if fits(cap):
        return cap
    candidates = [n for n in range(cap, 0, -1) if fits(n)]
    rounded = [n for n in candidates if n % GRANULARITY == 0]
    return rounded[0] if rounded else candidates[0] if candidates else 0


def test_the_rule_is_the_most_steps_the_slowest_fits():
    rng = random.Random(7)
    for _ in range(300):
        measurements = {f"m{i}": {"step_s": rng.uniform(0.01, 0.5), "seconds_left": rng.uniform(5, 600)}
                        for i in range(rng.randint(1, 8))}
        cap = rng.choice([150, 2000, 5000])
        expected = brute_force_steps(measurements, cap)
        if expected == 0:
            with pytest.raises(PathEvalError, match="no training step fits"):
                agreed_steps(measurements, cap)
        else:
            assert agreed_steps(measurements, cap) == expected


def test_members_time_together_and_leave_with_the_same_steps(tmp_path):
    step_times = {"rope": 0.10, "fox": 0.09, "path": 0.14, "path_fox": 0.16}
    results, errors = {}, []

    def member(name):
        def time_step():
            # every member is there before anyone times (the GPU shared as in training)
            assert len(list(tmp_path.glob("*.ready"))) == len(step_times)
            return step_times[name]
        try:
            time.sleep(0.05 * len(name))  # members arrive at different times
            results[name] = agree(tmp_path, name, len(step_times), 2000, time_step, lambda: 300.0, poll_s=0.01)
        except Exception as error:  # noqa: BLE001  (reported by the assertion below)
            errors.append(error)

    threads = [threading.Thread(target=member, args=(name,)) for name in step_times]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expected = brute_force_steps({n: {"step_s": s, "seconds_left": 300.0} for n, s in step_times.items()}, 2000)
    assert expected == 1600  # 300 s * 0.9 / 0.16 s = 1687 steps for the slowest
    assert {r["steps"] for r in results.values()} == {expected}
    assert all(r["members"] == results["rope"]["members"] and r["cap"] == 2000 for r in results.values())


def test_a_missing_member_stops_the_others_at_the_deadline_naming_who_came(tmp_path):
    clock = iter(range(5, -100, -1))
    with pytest.raises(PathEvalError, match=r"only 1 of 2 members .* \(arrived: path\)"):
        agree(tmp_path, "path", 2, 2000, lambda: 0.1, lambda: next(clock), poll_s=0)


def test_a_reused_folder_is_refused(tmp_path):
    (tmp_path / "old_run.ready").write_text("{}")
    with pytest.raises(PathEvalError, match="fresh agreement folder"):
        agree(tmp_path, "path", 1, 2000, lambda: 0.1, lambda: 60.0, poll_s=0)


@pytest.mark.slow
def test_models_trained_at_once_agree_and_their_cards_say_so(tmp_path):
    from training.train import agreement_name, command_of, parser

    def arguments(name):
        return ["--variant", "rope", "--task", "a5", "--layers", "1", "--steps", "300", "--batch", "8",
                "--eval-every", "1000", "--final-eval", "16", "--device", "cpu", "--deadline-s", "3600",
                "--agree-dir", str(tmp_path / "agree"), "--agree-members", "2", "--seed", name[-1],
                "--out", str(tmp_path / name)]
    # processes of their own, as on the GPU host
    trainings = [subprocess.Popen([sys.executable, "-m", "training.train", *arguments(name)], cwd=REPOSITORY,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for name in ("s0", "s1")]
    for training in trainings:
        assert training.wait(timeout=600) == 0, training.stderr.read()[-2000:]
    cards = [json.loads((tmp_path / name / "model_card.json").read_text()) for name in ("s0", "s1")]
    agreement = cards[0]["budget_agreement"]
    assert set(agreement["members"]) == {agreement_name(str(tmp_path / n)) for n in ("s0", "s1")}
    assert agreement["steps"] == agreed_steps(agreement["members"], 300) and agreement["withdrawn"] == []
    assert all(card["steps"] == card["planned_steps"] == agreement["steps"] for card in cards)
    assert cards[1]["budget_agreement"] == agreement
    assert f"Its {agreement['steps']} steps were agreed among the 2 models" in (tmp_path / "s1" / "README.md").read_text()
    args = parser().parse_args(arguments("s0"))
    args.steps = agreement["steps"]
    assert "--agree" not in command_of(args) and f"--steps {agreement['steps']}" in command_of(args)


def test_a_member_that_withdraws_is_left_out_and_named(tmp_path):
    from training.agreement import withdraw

    results = {}

    def member(name, step_s):
        results[name] = agree(tmp_path, name, 3, 2000, lambda: step_s, lambda: 100.0, poll_s=0.01)
    threads = [threading.Thread(target=member, args=args) for args in (("rope", 0.05), ("fox", 0.02))]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    withdraw(tmp_path, "path")  # failed while compiling
    for thread in threads:
        thread.join()
    assert results["rope"] == results["fox"]
    assert results["rope"]["withdrawn"] == ["path"] and set(results["rope"]["members"]) == {"rope", "fox"}
    assert results["rope"]["steps"] == brute_force_steps(results["rope"]["members"], 2000) == 1800


def test_a_training_that_fails_withdraws_from_its_agreement(tmp_path, monkeypatch):
    from training import train

    monkeypatch.setattr("sys.argv", ["train", "--variant", "rope", "--steps", "10", "--stream", str(tmp_path / "none.npy"),
                                     "--tokenizer", str(tmp_path / "no_tokenizer"), "--device", "cpu",
                                     "--deadline-s", "60", "--agree-dir", str(tmp_path / "agree"),
                                     "--agree-members", "4", "--out", str(tmp_path / "models" / "rope")])
    (tmp_path / "agree").mkdir()
    with pytest.raises(Exception):
        train.main()
    assert [p.name for p in (tmp_path / "agree").iterdir()] == [train.agreement_name(str(tmp_path / "models" / "rope"))
                                                               + ".withdrawn"]
