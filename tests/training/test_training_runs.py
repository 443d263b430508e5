"""Collecting training runs: logs and model cards read alike, groups split by whether a run finished
its planned steps, mean / min / max computed by hand here."""
import json

import pytest

from path_eval.errors import PathEvalError
from training.runs import collect, summarize


def card(seed, errors, steps=2000, planned=2000, variant="path"):
    return {"task": "flipflop", "variant": variant, "layers": 1, "batch_windows": 64, "seed": seed, "steps": steps, "planned_steps": planned,
            "tokens": steps * 65536, "stopped_at_deadline": steps < planned, "final_training_loss": 0.1,
            "flipflop_error": {"sets": {}, **dict(zip(("in", "sparse", "dense"), errors))},
            "command": "python -m training.train ...", "git_revision": "abc1234"}


def write_log(path, final, points):
    path.write_text("\n".join(["rope/flipflop: 1 parameters", *map(json.dumps, points), json.dumps(final)]) + "\n")


def test_logs_and_cards_collect_alike_and_summarize_by_hand(tmp_path):
    (tmp_path / "logs").mkdir()
    point = {"step": 250, "loss": 0.5, "lr": 1e-3, "error": {"in": 0.3, "in_reads": 9, "sparse": 0.4, "dense": 0.2}}
    write_log(tmp_path / "logs" / "flipflop_path_seed1.log", card(1, (0.1, 0.3, 0.0)), [{"step": 1, "loss": 2.0}, point])
    write_log(tmp_path / "logs" / "flipflop_path_seed2.log", card(2, (0.2, 0.6, 0.0), steps=500), [])
    (tmp_path / "zoo" / "flipflop_path").mkdir(parents=True)
    (tmp_path / "zoo" / "flipflop_path" / "model_card.json").write_text(
        json.dumps(card(0, (0.4, 0.0, 0.1)) | {"curve": [point]}))
    runs = collect("seeds", tmp_path / "logs") + collect("zoo", tmp_path / "zoo")
    assert [r["curve"] for r in runs] == [[{"step": 250, "loss": 0.5, "in": 0.3, "sparse": 0.4, "dense": 0.2}], [],
                                         [{"step": 250, "loss": 0.5, "in": 0.3, "sparse": 0.4, "dense": 0.2}]]
    finished, stopped = sorted(summarize(runs), key=lambda row: not row["finished"])
    assert finished["runs"] == 2 and finished["labels"] == ["seeds", "zoo"] and finished["seeds"] == [1, 0]
    assert finished["scores"]["in"] == {"mean": pytest.approx(0.25), "min": 0.1, "max": 0.4}
    assert stopped["runs"] == 1 and stopped["steps"] == [500, 500] and stopped["scores"]["sparse"]["mean"] == 0.6


def test_state_tracking_runs_group_by_depth_and_keep_their_accuracies(tmp_path):
    def a5_card(layers, seed, token):
        return {"task": "a5", "variant": "path", "layers": layers, "batch_windows": 256, "seed": seed, "steps": 100,
                "planned_steps": 100,
                "tokens": 537600, "stopped_at_deadline": False, "final_training_loss": 3.0,
                "accuracy": {"sequences": 4096, "token_accuracy": token, "sequence_accuracy": token / 2,
                             "final_accuracy": token / 4},
                "command": "python -m training.train ...", "git_revision": "abc1234"}
    for layers, seed, token in ((1, 0, 0.1), (1, 1, 0.3), (2, 0, 0.9)):
        (tmp_path / f"a5_path_L{layers}_s{seed}").mkdir()
        (tmp_path / f"a5_path_L{layers}_s{seed}" / "model_card.json").write_text(json.dumps(a5_card(layers, seed, token)))
    one, two = summarize(collect("trial", tmp_path))
    assert (one["layers"], one["runs"], two["layers"], two["runs"]) == (1, 2, 2, 1)
    assert one["scores"]["token_accuracy"] == {"mean": pytest.approx(0.2), "min": 0.1, "max": 0.3}
    assert two["scores"] == {"token_accuracy": {"mean": 0.9, "min": 0.9, "max": 0.9},
                             "sequence_accuracy": {"mean": 0.45, "min": 0.45, "max": 0.45},
                             "final_accuracy": {"mean": 0.225, "min": 0.225, "max": 0.225}}


def test_mqrar_runs_group_by_n_and_render_by_variant_and_n(tmp_path):
    from training.runs import render_diagnostic_training

    def mqrar_card(n, seed, token):
        return {"task": "mqrar", "variant": "path", "layers": 2, "batch_windows": 64, "seed": seed, "steps": 900,
                "planned_steps": 900, "tokens": 900 * 64 * 768, "stopped_at_deadline": False,
                "final_training_loss": 3.0, "data": {"n": n},
                "accuracy": {"sequences": 4096, "token_accuracy": token, "sequence_accuracy": token / 2,
                             "final_accuracy": token / 4},
                "command": "python -m training.train ...", "git_revision": "abc1234"}
    models = tmp_path / "models"
    for n, seed, token in ((1, 0, 0.995), (1, 1, 0.102), (2, 0, 0.011)):
        (models / f"mqrar{n}_path_s{seed}").mkdir(parents=True)
        (models / f"mqrar{n}_path_s{seed}" / "model_card.json").write_text(json.dumps(mqrar_card(n, seed, token)))
    runs = collect("mqrar", models)
    one, two = summarize(runs)  # one depth, two Ns: two groups
    assert (one["mqrar_n"], one["runs"], two["mqrar_n"], two["runs"]) == (1, 2, 2, 1)
    assert one["scores"]["token_accuracy"] == {"mean": pytest.approx(0.5485), "min": 0.102, "max": 0.995}
    trials = tmp_path / "results" / "state_tracking" / "trials"
    trials.mkdir(parents=True)
    (trials / "trial.json").write_text(json.dumps({"trial_wall_s": 70.0, "trial_s": 60.0, "concurrent": 16,
                                                   "step_s": {"mqrar/path": 0.267}}))
    (trials / "runs.json").write_text(json.dumps({"machine": "a GPU", "summary": summarize(runs), "runs": runs}))
    text = render_diagnostic_training(tmp_path / "results", "trial.json", "runs.json", "mqrar")
    assert "a step of 64 sequences of 768 tokens, each process among 16: path 267 ms" in text
    assert "| path | 1 | 900 | 2 | 54.85% [10.2%, 99.5%] |" in text and "| path | 2 | 900 | 1 |" in text
    untimed = render_diagnostic_training(tmp_path / "results", None, "runs.json", "mqrar")  # calls of fixed STEPS
    assert "No timing trial: the calls fixed the budget (`STEPS`)." in untimed and "trial.json" not in untimed
    assert untimed.split("\n\n")[2:] == text.split("\n\n")[2:]  # the same accuracies, from the same runs
    import lzma
    (trials / "runs.json.xz").write_bytes(lzma.compress((trials / "runs.json").read_bytes()))
    compressed = render_diagnostic_training(tmp_path / "results", "trial.json", "runs.json.xz", "mqrar")
    assert compressed == text.replace("runs.json`", "runs.json.xz`")  # an .xz summary reads as the plain one


def test_a_folder_without_runs_or_an_unfinished_log_is_one_error(tmp_path):
    with pytest.raises(PathEvalError, match="no training runs"):
        collect("x", tmp_path)
    (tmp_path / "flipflop_rope_seed0.log").write_text('{"step": 1, "loss": 2.0}\n')
    with pytest.raises(PathEvalError, match="does not end with a model card"):
        collect("x", tmp_path)


def test_a_trial_says_how_its_processes_were_timed():
    from training.runs import trial_steps

    assert trial_steps({"trial_s": 60.0, "step_s": {}}) == "steps until 60 s"
    assert trial_steps({"step_s": {}}) == "40 steps"  # the committed trials, timed before --trial-s


def test_an_xz_summary_is_written_compressed_and_read_back(tmp_path, monkeypatch):
    import lzma
    import sys

    from benchmarks.markdown import load
    from training import runs

    card = {"task": "a5", "variant": "path", "layers": 4, "batch_windows": 1024, "seed": 0, "steps": 40,
            "planned_steps": 40, "tokens": 40 * 1024 * 21, "stopped_at_deadline": False, "final_training_loss": 1.0,
            "data": {"length": 20}, "wall_time_s": 12.5,
            "accuracy": {"sequences": 64, "token_accuracy": 0.5, "sequence_accuracy": 0.1, "final_accuracy": 0.2},
            "command": "python -m training.train ...", "git_revision": "abc1234"}
    (tmp_path / "models" / "a5_path_L4_s0").mkdir(parents=True)
    (tmp_path / "models" / "a5_path_L4_s0" / "model_card.json").write_text(json.dumps(card))
    out = tmp_path / "runs.json.xz"
    monkeypatch.setattr(sys, "argv", ["runs", "--run", f"x={tmp_path / 'models'}", "--out", str(out)])
    runs.main()
    data = json.loads(lzma.decompress(out.read_bytes()))
    assert load(out) == data and data["runs"][0]["wall_time_s"] == 12.5
    assert data["summary"][0]["scores"]["token_accuracy"]["mean"] == 0.5


def test_the_mqrar_plan_progress_names_every_seed_and_n_still_to_train(tmp_path):
    """A (seed, N) counts as trained once a finished run of it is summarised; one stopped at its deadline
    is still to train."""
    from training import diagnostics
    from training.runs import render_mqrar_4000_steps

    def run(n, seed, finished=True):
        return {"run": "call", "task": "mqrar", "variant": "path", "layers": 2, "mqrar_n": n, "batch": 64, "seed": seed,
                "steps": 4000 if finished else 3100, "planned_steps": 4000, "finished": finished,
                "scores": {name: 0.5 for name in ("token_accuracy", "sequence_accuracy", "final_accuracy")}}
    runs = [run(1, 0), run(3, 2), run(2, 1, finished=False)]
    trials = tmp_path / "state_tracking" / "trials"
    trials.mkdir(parents=True)
    import lzma
    (trials / "mqrar_4000_steps.json.xz").write_bytes(lzma.compress(json.dumps(
        {"machine": "a GPU", "summary": summarize(runs), "runs": runs}).encode()))
    progress = render_mqrar_4000_steps(tmp_path).split("\n\n")[-1]
    missing = [f"seed {seed} N = {n}" for seed in diagnostics.SEEDS for n in diagnostics.MQRAR_NS
               if (seed, n) not in ((0, 1), (2, 3))]
    assert progress == f"Trained so far: 2 of the plan's 12 (seed, N) calls; still to train: {', '.join(missing)}."
    assert "seed 1 N = 2" in progress  # stopped at its deadline: not trained
    everything = [run(n, seed) for seed in diagnostics.SEEDS for n in diagnostics.MQRAR_NS]
    (trials / "mqrar_4000_steps.json.xz").write_bytes(lzma.compress(json.dumps(
        {"machine": "a GPU", "summary": summarize(everything), "runs": everything}).encode()))
    assert render_mqrar_4000_steps(tmp_path).endswith("Trained so far: 12 of the plan's 12 (seed, N) calls.")


def test_extend_adds_a_later_calls_runs_to_an_earlier_file_without_its_folders(tmp_path, monkeypatch):
    """A plan's earlier calls are read from the committed file (their folders are gone); the summary is
    recomputed over all runs, every command kept; a run given twice is one error."""
    import shutil
    import sys

    from benchmarks.markdown import load
    from training import runs

    def call(folder, seed, token):
        card = {"task": "mqrar", "variant": "path", "layers": 2, "batch_windows": 64, "seed": seed, "steps": 40,
                "planned_steps": 40, "tokens": 40 * 64 * 768, "stopped_at_deadline": False, "data": {"n": 1},
                "accuracy": {"sequences": 64, "token_accuracy": token, "sequence_accuracy": 0.0, "final_accuracy": 0.0},
                "command": "python -m training.train ...", "git_revision": "abc1234"}
        (folder / f"mqrar1_path_s{seed}").mkdir(parents=True)
        (folder / f"mqrar1_path_s{seed}" / "model_card.json").write_text(json.dumps(card))

    def main(*argv):
        monkeypatch.setattr(sys, "argv", ["runs", *argv])
        runs.main()

    out = tmp_path / "plan.json.xz"
    call(tmp_path / "first", 0, 0.25)
    main("--run", f"s0={tmp_path / 'first'}", "--machine", "GPU A", "--out", str(out))
    first_command = load(out)["command"]
    shutil.rmtree(tmp_path / "first")
    call(tmp_path / "second", 1, 0.75)
    main("--extend", str(out), "--run", f"s1={tmp_path / 'second'}", "--out", str(out))
    data = load(out)
    assert [(run["run"], run["seed"]) for run in data["runs"]] == [("s0", 0), ("s1", 1)]
    assert data["machine"] == "GPU A" and data["earlier_commands"] == [first_command]
    assert data["command"].startswith(f"python -m training.runs --extend {out} --run s1=")
    assert data["summary"][0]["runs"] == 2 and data["summary"][0]["scores"]["token_accuracy"]["mean"] == 0.5
    with pytest.raises(PathEvalError, match="given twice"):
        main("--extend", str(out), "--run", f"s1={tmp_path / 'second'}", "--out", str(out))
    with pytest.raises(PathEvalError, match="no such file"):
        main("--extend", str(tmp_path / "missing.json"), "--run", f"s1={tmp_path / 'second'}", "--out", str(out))


def test_the_late_loss_column_shows_who_was_still_learning_by_seed(tmp_path):
    """The loss at the last logged step and its change since the first point of the last quarter,
    worked by hand; a run without a curve shows "-"; each row lists its own group's seeds in order."""
    from training.runs import late_loss, render_diagnostic_training

    falling = [{"step": s, "loss": 8.0 - s / 1000} for s in range(100, 4001, 100)]  # 7.9 ... 4.0
    flat = [{"step": s, "loss": 7.5} for s in range(100, 4001, 100)]
    assert late_loss(falling) == "4.00 (-1.00)"  # 4.0 at 4000 against 5.0 at 3000
    assert late_loss(flat) == "7.50 (+0.00)" and late_loss([]) == "-"
    assert late_loss([{"step": 50, "loss": 2.0}, {"step": 90, "loss": 1.5}]) == "1.50 (+0.00)"  # 90: its own quarter

    def run(n, seed, curve):
        return {"run": "call", "task": "mqrar", "variant": "path", "layers": 2, "mqrar_n": n, "batch": 64,
                "seed": seed, "steps": 4000, "planned_steps": 4000, "finished": True, "curve": curve,
                "scores": {name: 0.5 for name in ("token_accuracy", "sequence_accuracy", "final_accuracy")}}
    runs = [run(2, 1, falling), run(2, 0, flat), run(3, 0, [])]
    trials = tmp_path / "state_tracking" / "trials"
    trials.mkdir(parents=True)
    (trials / "runs.json").write_text(json.dumps({"machine": "a GPU", "summary": summarize(runs), "runs": runs}))
    text = render_diagnostic_training(tmp_path, None, "runs.json", "mqrar")
    assert "| path | 2 | 4000 | 2 | 50% [50%, 50%] | 50% [50%, 50%] | 50% [50%, 50%] | s0 7.50 (+0.00), s1 4.00 (-1.00) |" in text
    assert "| path | 3 | 4000 | 1 | 50% [50%, 50%] | 50% [50%, 50%] | 50% [50%, 50%] | s0 - |" in text
