"""The `ci` suite's A5 record has teeth: the zoo's A5 model (a5_rope, trained at k = 5, where it tags
81% of the letters) on the ci task `a5`, checked against the committed baseline filtered to it,
passes unchanged (exit 0) and fails with the model broken (its attention's output projection zeroed
in every layer: each letter then sees only itself; exit 1, REGRESSED) or the generator broken (the
product composed in the other order, a . b as b . a: exit 2, the frozen words' fingerprint differs,
and exit 1 on the values once that fingerprint is set aside). Every run freezes its words in a cache
of its own, as test_ci_pipeline_teeth.py explains."""
import json
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

from path_eval.cli import main
from path_eval.models.zoo import zoo_models
from path_eval.reports import check as check_module
from path_eval.tasks import a5

BASELINE = Path(__file__).resolve().parents[2] / "results" / "ci" / "baseline.json"
MODEL, TASK, LENGTH = "a5_rope", "a5", 5


def run(root: Path, model: str) -> Path:
    out = root / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH_EVAL_CACHE", str(root / "cache"))
        patch.setenv("HF_DATASETS_CACHE", str(root / "cache" / "hf-datasets"))
        assert main(["run", "--suite", "ci", "--model", model, "--tasks", TASK, "--out", str(out), "--quiet"]) == 0
    return out


def check(tmp_path: Path, out: Path, capsys) -> tuple[int, str, float]:
    baseline = json.loads(BASELINE.read_text())
    kept = [r for r in baseline["records"] if (r["model"], r["task"], r["length"]) == (MODEL, TASK, LENGTH)]
    assert len(kept) == 1 and kept[0]["value"] > 0.75, "the baseline's A5 model tags most letters"
    filtered = tmp_path / "baseline_a5.json"
    filtered.write_text(json.dumps({"tolerances": {"a5/token_accuracy": baseline["tolerances"]["a5/token_accuracy"]},
                                    "records": kept}))
    capsys.readouterr()
    code = main(["check", str(out), "--baseline", str(filtered)])
    value = json.loads((out / "results.json").read_text())[0]["value"]
    return code, capsys.readouterr().out, value


def test_the_unchanged_model_passes(tmp_path, capsys):
    folder = tmp_path / "copy" / MODEL  # a copy under the baseline's name
    shutil.copytree(zoo_models(MODEL)[0], folder)
    code, out, value = check(tmp_path, run(tmp_path, str(folder)), capsys)
    assert code == 0 and "0 of 1" in out, out


def test_a_broken_model_fails(tmp_path, capsys):
    folder = tmp_path / "broken" / MODEL
    shutil.copytree(zoo_models(MODEL)[0], folder)
    weights = load_file(folder / "model.safetensors")
    projections = [name for name in weights if name.endswith("self_attn.o_proj.weight")]
    assert len(projections) == 2
    for name in projections:
        weights[name].zero_()
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    code, out, value = check(tmp_path, run(tmp_path, str(folder)), capsys)
    assert code == 1 and "REGRESSED" in out, out
    assert value < 0.5


def test_a_broken_generator_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(a5, "MULTIPLY", a5.MULTIPLY.T.copy())
    out = run(tmp_path, f"zoo:{MODEL}")
    code, report, value = check(tmp_path, out, capsys)
    assert code == 2 and "data_fingerprint differs" in report, report
    monkeypatch.setattr(check_module, "PROTOCOL_FIELDS",
                        tuple(f for f in check_module.PROTOCOL_FIELDS if f != "data_fingerprint"))
    code, report, value = check(tmp_path, out, capsys)
    assert code == 1 and "REGRESSED" in report, report
    assert value < 0.5
