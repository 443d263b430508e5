"""The state-tracking diagnostics' training plan and recipe: every variant gets the same budget,
data law and seeds; every planned command is one train.py accepts and gives back from its own
arguments; and the recipe trains, saves and reloads a model on the CPU (RoPE, whose Llama runs
there; fla's variants need a GPU) whose tokenizer is the task's vocabulary."""
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from path_eval.tasks import a5, mqrar
from training import diagnostics
from training.train import VARIANTS, command_of, parser, tagging_task


def test_every_variant_has_the_same_models_budget_and_seeds():
    models = diagnostics.plan()
    assert len({m.name for m in models}) == len(models) == 4 * 3 * 4 * 2
    by_setting = defaultdict(set)
    for model in models:
        words = model.arguments(Path("/out"), "rev")
        args = parser().parse_args(words)
        setting = (model.task, args.layers, args.mqrar_n, args.seed, args.steps, args.batch, args.lr, args.a5_length,
                   args.mqrar_length, args.mqrar_pairs, args.cuda_graphs)
        by_setting[setting].add(args.variant)
    assert all(variants == set(VARIANTS) for variants in by_setting.values())
    assert {m.options["layers"] for m in models if m.task == "a5"} == {1, 2, 3, 4}
    assert {m.options["mqrar_n"] for m in models if m.task == "mqrar"} == {1, 2, 3, 4}
    assert all("--cuda-graphs" in m.arguments(Path("/out"), "rev") for m in models)


def test_shares_hold_every_model_once_and_end_together():
    models = diagnostics.plan()
    # PaTH's steps twice as slow as the others': dealing by cost, not by position in the plan
    trial = {"step_s": {f"{task}/{variant}": 0.02 if variant.startswith("path") else 0.01
                        for task in diagnostics.RECIPE for variant in VARIANTS}}
    shares = diagnostics.deal(models, 12, trial)
    assert sorted(m.name for share in shares for m in share) == sorted(m.name for m in models)
    loads = [sum(diagnostics.model_cost(trial, m) for m in share) for share in shares]
    largest_model = max(diagnostics.model_cost(trial, m) for m in models)
    assert max(loads) - min(loads) <= largest_model
    assert all({m.variant for m in share} != {"path"} for share in shares)  # no worker of PaTH alone


def test_a_card_command_trains_the_same_model_again():
    model = diagnostics.plan("mqrar")[5]
    args = parser().parse_args(model.arguments(Path("/out"), "rev"))
    again = parser().parse_args(command_of(args).split()[3:])
    assert vars(again) == vars(args)


def test_the_tasks_draw_the_harness_generators_law():
    args = parser().parse_args(diagnostics.plan("a5")[0].arguments(Path("/o"), "r"))
    task = tagging_task(args)
    inputs, targets = task.generate(8, seed=3)
    expected = a5.generate(8, 20, "product", seed=3)
    assert np.array_equal(inputs, expected[0]) and np.array_equal(targets, expected[1]) and task.tokens == 21
    args = parser().parse_args(diagnostics.plan("mqrar")[-1].arguments(Path("/o"), "r"))
    assert np.array_equal(tagging_task(args).generate(2, seed=1)[1], mqrar.generate(2, 768, 4, 32, seed=1)[1])


@pytest.mark.slow
def test_the_recipe_trains_saves_and_reloads_a_model_on_the_cpu(tmp_path):
    from path_eval import load_model
    from training.train import train

    out = tmp_path / "a5_rope_L1_s0"
    train(parser().parse_args(["--variant", "rope", "--task", "a5", "--layers", "1", "--steps", "25", "--batch", "32",
                               "--eval-every", "25", "--final-eval", "64", "--device", "cpu", "--cuda-graphs",
                               "--out", str(out)]))
    card = json.loads((out / "model_card.json").read_text())
    assert card["steps"] == 25 and card["layers"] == 1 and card["data"]["length"] == 20
    assert card["steps_run"] == "eager (CUDA graphs need a CUDA device)"  # the recipe's flag, refused here
    assert card["accuracy"]["sequences"] == 64 and 0 <= card["accuracy"]["token_accuracy"] <= 1
    model, tokenizer = load_model(out)
    assert a5.VOCABULARY.used_by(tokenizer.convert_tokens_to_ids)
    assert model.config.num_hidden_layers == 1 and model.config.vocab_size == a5.VOCAB_SIZE


def test_fitting_scales_every_task_by_one_factor_and_never_up():
    models = diagnostics.plan()
    trial = {"step_s": {f"{task}/{variant}": 0.01 for task in diagnostics.RECIPE for variant in VARIANTS}}
    serial = sum(0.01 * diagnostics.RECIPE[m.task]["steps"] for m in models)  # 3840 s
    steps = diagnostics.fitted_steps(trial, models, workers=12, seconds=serial / 12 / 2)
    assert steps == {task: recipe["steps"] // 2 for task, recipe in diagnostics.RECIPE.items()}
    assert diagnostics.fitted_steps(trial, models, workers=12, seconds=10 * serial) == \
        {task: recipe["steps"] for task, recipe in diagnostics.RECIPE.items()}


def test_fitting_fits_the_busiest_worker_not_the_mean():
    models = diagnostics.plan()
    trial = {"step_s": {f"{task}/{variant}": 0.03 if variant == "path" else 0.01
                        for task in diagnostics.RECIPE for variant in VARIANTS}}
    steps = diagnostics.fitted_steps(trial, models, workers=12, seconds=100.0)
    shares = diagnostics.deal(models, 12, trial)
    busiest = max(sum(trial["step_s"][f"{m.task}/{m.variant}"] * steps[m.task] for m in share) for share in shares)
    assert busiest <= 100.0 and steps["a5"] == steps["mqrar"]


def a5_words(out: Path, *extra: str) -> list[str]:
    return ["--variant", "rope", "--task", "a5", "--layers", "1", "--steps", "5", "--batch", "4", "--final-eval", "8",
            "--device", "cpu", "--out", str(out), *extra]


def test_a_deadline_before_the_first_step_saves_no_model(tmp_path):
    from path_eval.errors import PathEvalError
    from training.train import train

    with pytest.raises(PathEvalError, match="passed before the first training step"):
        train(parser().parse_args(a5_words(tmp_path / "late", "--deadline-s", "0.001")))
    assert not (tmp_path / "late").exists()


def test_a_worker_goes_on_past_a_model_that_could_not_train_and_names_it(tmp_path):
    share = [a5_words(tmp_path / name, "--deadline-s", "0.001") for name in ("first", "second")]
    with pytest.raises(SystemExit, match="not trained: .*first, .*second"):
        diagnostics.train_share(share, tmp_path / "worker.log")
    lines = [json.loads(line) for line in (tmp_path / "worker.log").read_text().splitlines() if line.startswith("{")]
    assert [line["not_trained"] for line in lines] == [str(tmp_path / "first"), str(tmp_path / "second")]


def test_trial_step_times_are_each_variants_mean_over_its_replicas():
    card = {"batch_windows": 64, "training_length": 768, "steps": 200}
    cards = [("mqrar", "path", card | {"tokens_per_s": 64 * 768 / 0.2}),
             ("mqrar", "path", card | {"tokens_per_s": 64 * 768 / 0.3}),
             ("mqrar", "fox", card | {"tokens_per_s": 64 * 768 / 0.1})]
    step_s = diagnostics.trial_step_s(cards, 60)
    assert step_s.keys() == {("mqrar", "path"), ("mqrar", "fox")}
    assert step_s[("mqrar", "path")] == pytest.approx(0.25) and step_s[("mqrar", "fox")] == pytest.approx(0.1)
    from path_eval.errors import PathEvalError
    with pytest.raises(PathEvalError, match="took 15 steps before --trial-s 60.*give a longer --trial-s"):
        diagnostics.trial_step_s([("a5", "rope", card | {"steps": 15, "tokens_per_s": None})], 60)


def test_a_call_per_seed_holds_every_variant_and_depth_of_it():
    models = diagnostics.plan("a5", (1,))
    assert {m.seed for m in models} == {1}
    assert {(m.variant, m.options["layers"]) for m in models} == {(v, d) for v in VARIANTS for d in diagnostics.A5_DEPTHS}
    seeds = diagnostics.subset(diagnostics.SEEDS, "seeds")
    assert seeds("2,0") == (0, 2)
    import argparse
    for bad in ("3", "x", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="give seeds among 0,1,2"):
            seeds(bad)


def test_a_call_per_mqrar_n_holds_every_variant_of_it_and_leaves_a5_whole():
    models = diagnostics.plan("mqrar", (0,), (2, 4))
    assert {(m.variant, m.options["mqrar_n"]) for m in models} == {(v, n) for v in VARIANTS for n in (2, 4)}
    assert len(diagnostics.plan("a5", (0,), (3,))) == len(VARIANTS) * len(diagnostics.A5_DEPTHS)
    both = diagnostics.plan(None, (0,), (1,))
    assert {m.name for m in both if m.task == "mqrar"} == {f"mqrar1_{v}_s0" for v in VARIANTS}
    probes = diagnostics.trial_probes(diagnostics.plan(None, (1, 2), (3, 4)))
    assert sorted(m.name for m in probes) == sorted([f"mqrar3_{v}_s1" for v in VARIANTS]
                                                    + [f"a5_{v}_L4_s1" for v in VARIANTS])
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="give MQRAR's N among 1,2,3,4"):
        diagnostics.subset(diagnostics.MQRAR_NS, "MQRAR's N")("5")


def test_fixed_steps_reach_every_planned_command_and_exclude_fitting(tmp_path):
    import subprocess
    import sys

    def diagnostics_cli(*words):
        return subprocess.run([sys.executable, "-m", "training.diagnostics", *words], capture_output=True, text=True,
                              cwd=Path(__file__).parents[2])
    listed = diagnostics_cli("plan", "--only", "a5", "--seeds", "1", "--steps", "4000").stdout.splitlines()
    assert len(listed) == 16 and all("--steps 4000" in line and "--seed 1 " in line for line in listed)
    one_n = diagnostics_cli("plan", "--only", "mqrar", "--seeds", "2", "--ns", "3", "--steps", "4000").stdout.splitlines()
    assert len(one_n) == 4 and all("--mqrar-n 3" in line and "--seed 2 " in line for line in one_n)
    both = diagnostics_cli("train", "--steps", "10", "--fit", str(tmp_path / "trial.json"))
    assert both.returncode == 2 and "--steps and --fit both set the steps: give one" in both.stderr
    fitted = diagnostics_cli("train", "--pause-after", "10", "--fit", str(tmp_path / "trial.json"))
    assert fitted.returncode == 2 and "--pause-after needs --steps" in fitted.stderr


def test_a_model_paused_and_resumed_equals_one_trained_straight_through(tmp_path):
    """--pause-after: three processes of three, three and one steps give the card's curve and
    accuracies and the weights of one process of seven steps, bit for bit (weights and optimizer
    state kept in float32, every batch drawn from its own seed; a pause between two logged steps
    keeps the losses not yet logged)."""
    from safetensors.torch import load_file

    from training.train import RESUME_FILE, train

    common = ("--steps", "7", "--log-every", "2", "--eval-every", "3")
    assert train(parser().parse_args(a5_words(tmp_path / "straight", *common))) is True
    paused = a5_words(tmp_path / "paused", *common, "--pause-after", "3")
    assert [train(parser().parse_args(paused)) for _ in range(3)] == [False, False, True]
    assert not (tmp_path / "paused" / RESUME_FILE).exists()
    straight, resumed = (json.loads((tmp_path / name / "model_card.json").read_text())
                         for name in ("straight", "paused"))

    def computed(card):
        return ([{k: v for k, v in point.items() if k != "elapsed_s"} for point in card["curve"]], card["accuracy"],
                card["final_training_loss"], card["steps"], card["command"].rsplit(" --out ", 1)[0])
    assert computed(resumed) == computed(straight)
    assert [segment["steps"] for segment in resumed["segments"]] == [[0, 3], [3, 6], [6, 7]]
    assert {(segment["revision"], segment["steps_run"]) for segment in resumed["segments"]} == \
        {("unknown", "eager")}  # each process's own, not only the last one's
    assert "segments" not in straight and "--pause-after" not in resumed["command"]
    weights = [load_file(tmp_path / name / "model.safetensors") for name in ("straight", "paused")]
    assert weights[0].keys() == weights[1].keys() and all(weights[0][k].equal(weights[1][k]) for k in weights[0])


def test_a_paused_model_goes_on_only_under_its_own_settings(tmp_path):
    from path_eval.errors import PathEvalError
    from training.train import train

    assert train(parser().parse_args(a5_words(tmp_path / "m", "--pause-after", "2"))) is False
    with pytest.raises(PathEvalError, match=r"paused under other settings \(lr\): give the command it paused"):
        train(parser().parse_args(a5_words(tmp_path / "m", "--pause-after", "2", "--lr", "0.01")))


def test_a_worker_goes_on_with_paused_models_and_passes_over_finished_ones(tmp_path):
    share = [a5_words(tmp_path / "m", "--pause-after", "3")]  # five steps: a pause, then the card
    for _ in range(3):
        diagnostics.train_share(share, tmp_path / "worker.log")
    lines = [json.loads(line) for line in (tmp_path / "worker.log").read_text().splitlines() if line.startswith("{")]
    outcomes = [next(k for k in ("paused", "trained", "already_trained") if k in line) for line in lines
                if {"paused", "trained", "already_trained"} & line.keys()]
    assert outcomes == ["paused", "trained", "already_trained"]
    # another schedule in the same folder (a warm host's earlier call): trained again, and the old
    # card goes at its first pause, so nothing scores the old model as this one
    diagnostics.train_share([a5_words(tmp_path / "m", "--pause-after", "3", "--steps", "7")], tmp_path / "worker.log")
    assert json.loads((tmp_path / "worker.log").read_text().splitlines()[-1]).keys() >= {"paused"}
    assert not (tmp_path / "m" / "model_card.json").exists()


def test_pausing_is_refused_where_it_cannot_resume():
    import subprocess
    import sys

    refused = subprocess.run([sys.executable, "-m", "training.train", "--variant", "rope", "--task", "flipflop",
                              "--steps", "4", "--pause-after", "2", "--out", "/tmp/x"], capture_output=True, text=True,
                             cwd=Path(__file__).parents[2])
    assert refused.returncode == 2 and "--pause-after takes a positive number of steps, for --task a5 or mqrar" \
        in refused.stderr


def test_a_pausing_model_pauses_at_its_deadline_instead_of_ending_its_schedule(tmp_path, monkeypatch):
    from training import train as train_module

    real_lr_at = train_module.lr_at

    def lr_at_then_late(*args):  # during the first step the process's deadline passes
        monkeypatch.setattr(train_module, "PROCESS_START", train_module.time.time() - 2000.0)
        return real_lr_at(*args)
    monkeypatch.setattr(train_module, "lr_at", lr_at_then_late)
    words = a5_words(tmp_path / "m", "--pause-after", "100", "--deadline-s", "1000")  # 5 steps, pausing at 100
    assert train_module.train(parser().parse_args(words)) is False
    assert not (tmp_path / "m" / "model_card.json").exists()
    state = train_module.torch.load(tmp_path / "m" / train_module.RESUME_FILE, weights_only=False)
    assert state["steps_done"] == 1 and state["segments"][0]["steps"] == [0, 1]
    monkeypatch.setattr(train_module, "lr_at", real_lr_at)
    monkeypatch.setattr(train_module, "PROCESS_START", train_module.time.time())
    assert train_module.train(parser().parse_args(words)) is True  # the next process finishes the schedule
    card = json.loads((tmp_path / "m" / "model_card.json").read_text())
    assert card["steps"] == 5 and not card["stopped_at_deadline"] and len(card["segments"]) == 2
