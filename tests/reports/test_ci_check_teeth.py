"""The `ci` suite's check has teeth: a zoo model broken in one of three ways, saved as a checkpoint,
makes `eval.py check` exit 1 against the committed baseline, while an unchanged copy exits 0; and two
runs on one machine give identical records. To stay short each model runs the tasks of its records
that are cheap (held-out perplexity at 1024, flip-flop error in distribution) with the baseline
filtered to them. The unchanged copy sits in a renamed folder and runs as `--model ZOO_NAME=FOLDER`:
check matches records by display name."""
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from path_eval.cli import main
from path_eval.models.zoo import zoo_models

BASELINE = Path(__file__).resolve().parents[2] / "results" / "ci" / "baseline.json"


def householder_ignored(weights: dict) -> None:
    """PaTH's beta forced to 0 (2 sigmoid(-30) ~ 2e-13): every H_t = I - beta w w^T is the identity."""
    for name in [n for n in weights if n.endswith("attn.bt_proj.weight")]:
        weights[name].zero_()
        weights[name.replace(".weight", ".bias")].fill_(-30.0)


def forget_gate_flipped(weights: dict) -> None:
    """The forget gate logsigmoid(f) becomes logsigmoid(-f): fla names it f_proj in FoX, g_proj in
    PaTH-FoX (whose checkpoints have PaTH's bt_proj)."""
    gate = ".attn.g_proj." if any(".attn.bt_proj." in n for n in weights) else ".attn.f_proj."
    flipped = [n for n in weights if gate in n]
    assert flipped, "the checkpoint has a forget gate"
    for name in flipped:
        weights[name].neg_()


def one_layer_perturbed(weights: dict) -> None:
    """Every weight of layer 0 times (1 + 0.01 N(0, 1)), seeded: a 1% perturbation."""
    generator = torch.Generator().manual_seed(0)
    for name in sorted(n for n in weights if ".layers.0." in n):
        noise = torch.randn(weights[name].shape, generator=generator)
        weights[name] = (weights[name].float() * (1 + 0.01 * noise)).to(weights[name].dtype)


def unchanged(weights: dict) -> None:
    pass


def checkpoint(tmp_path: Path, zoo_name: str, breakage, folder_name: str | None = None) -> Path:
    """A copy of the zoo model, broken, in a folder of its own name (the baseline's records are keyed
    by it) unless `folder_name` is given."""
    folder = tmp_path / breakage.__name__ / (folder_name or zoo_name)
    shutil.copytree(zoo_models(zoo_name)[0], folder)
    weights = load_file(folder / "model.safetensors")
    breakage(weights)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def run_and_check(tmp_path: Path, model: Path, task: str, length: int, name: str | None = None) -> int:
    """Run `model` (as `name`, a display name, when given) and check it against its baseline records."""
    out = tmp_path / "runs" / model.parent.name
    assert main(["run", "--suite", "ci", "--model", f"{name}={model}" if name else str(model), "--tasks", task,
                 "--lengths", str(length), "--out", str(out), "--quiet"]) == 0
    baseline = json.loads(BASELINE.read_text())
    kept = [r for r in baseline["records"]
            if r["model"] == (name or model.name) and r["task"] == task and r["length"] == length]
    assert kept, "the baseline has records for this model and task"
    filtered = tmp_path / f"baseline_{model.parent.name}.json"
    names = {r["metric"] for r in kept} | {f"{r['task']}/{r['metric']}" for r in kept}
    tolerances = {name: tol for name, tol in baseline["tolerances"].items() if name in names}
    filtered.write_text(json.dumps({"tolerances": tolerances, "records": kept}))
    return main(["check", str(out), "--baseline", str(filtered)])


CASES = [("path", householder_ignored, "heldout", 1024), ("fox", forget_gate_flipped, "heldout", 1024),
         ("path_fox", forget_gate_flipped, "heldout", 1024), ("rope", one_layer_perturbed, "heldout", 1024),
         ("flipflop_path", householder_ignored, "flipflop_in", 512)]


@pytest.mark.parametrize("zoo_name, breakage, task, length", CASES,
                         ids=[f"{c[0]}-{c[1].__name__}" for c in CASES])
def test_a_broken_model_fails_the_check(tmp_path, zoo_name, breakage, task, length, capsys):
    assert run_and_check(tmp_path, checkpoint(tmp_path, zoo_name, breakage), task, length) == 1
    assert "REGRESSED" in capsys.readouterr().out


@pytest.mark.parametrize("zoo_name, task, length", [("rope", "heldout", 1024), ("flipflop_path", "flipflop_in", 512)])
def test_the_unchanged_model_passes_and_two_runs_give_identical_records(tmp_path, zoo_name, task, length, capsys):
    model = checkpoint(tmp_path, zoo_name, unchanged, folder_name=f"renamed_{zoo_name}")
    assert run_and_check(tmp_path, model, task, length, name=zoo_name) == 0
    first = json.loads((tmp_path / "runs" / "unchanged" / "results.json").read_text())
    shutil.rmtree(tmp_path / "runs")  # no resume: the second run computes everything again
    assert run_and_check(tmp_path, model, task, length, name=zoo_name) == 0
    second = json.loads((tmp_path / "runs" / "unchanged" / "results.json").read_text())
    assert [(r["task"], r["bucket"], r["value"], r["stderr"], r["n"]) for r in first] == \
        [(r["task"], r["bucket"], r["value"], r["stderr"], r["n"]) for r in second]
    assert "0 of" in capsys.readouterr().out
