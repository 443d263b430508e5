"""Bad input gets one clear line (PathEvalError in the API; `error: ...` and exit code 2 on the CLI)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from path_eval import load_model
from path_eval.errors import PathEvalError
from path_eval.models import CausalDecoder
from path_eval.models.random_checkpoint import random_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt")
    random_model("path", "tiny", hidden_size=32, num_hidden_layers=1).save_pretrained(path)  # Mistral v1's 32000 rows
    return path


def copy_of(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def expect(path, match, **kwargs):
    with pytest.raises(PathEvalError, match=match):
        load_model(path, **kwargs)


def test_own_checkpoint_loads(checkpoint):
    model, tokenizer = load_model(checkpoint)
    assert isinstance(model, CausalDecoder) and len(tokenizer) == 32000
    assert model.backend_name == "torch"


def test_missing_directory(tmp_path):
    expect(tmp_path / "nope", "is not a directory")


def test_directory_without_weights(checkpoint, tmp_path):
    d = copy_of(checkpoint, tmp_path / "c")
    (d / "model.safetensors").unlink()
    expect(d, "no weights in")


def test_unknown_model_type(checkpoint, tmp_path):
    d = copy_of(checkpoint, tmp_path / "c")
    raw = json.loads((d / "config.json").read_text())
    raw["model_type"] = "mamba9000"
    (d / "config.json").write_text(json.dumps(raw))
    expect(d, "unknown model_type 'mamba9000'")


def test_weights_that_do_not_match_the_config(checkpoint, tmp_path):
    d = copy_of(checkpoint, tmp_path / "c")
    raw = json.loads((d / "config.json").read_text())
    raw["hidden_size"] = 64
    (d / "config.json").write_text(json.dumps(raw))
    expect(d, "do not match the config")


def test_missing_and_extra_tensors(checkpoint, tmp_path):
    d = copy_of(checkpoint, tmp_path / "c")
    state = load_file(d / "model.safetensors")
    state.pop("model.layers.0.attn.bt_proj.bias")
    save_file(state, d / "model.safetensors")
    expect(d, r"lack tensors that config.json implies \(1, e.g. model.layers.0.attn.bt_proj.bias\)")
    state["model.layers.0.attn.bt_proj.bias"] = torch.zeros(2)
    state["model.layers.0.attn.extra.weight"] = torch.zeros(2)
    save_file(state, d / "model.safetensors")
    expect(d, r"no place for \(1, e.g. model.layers.0.attn.extra.weight\)")


def test_unknown_backend_and_unsupported_requests(checkpoint, tmp_path):
    expect(checkpoint, "unknown attention backend 'flash9'", attention="flash9")
    model, _ = load_model(checkpoint, attention="reference")
    from path_eval.models.attention import reference
    old, reference.MAX_LOGIT_BYTES = reference.MAX_LOGIT_BYTES, 1 << 20
    try:
        with pytest.raises(PathEvalError, match="use attention='torch'"):
            model(torch.zeros(1, 512, dtype=torch.long))
    finally:
        reference.MAX_LOGIT_BYTES = old


def test_transformers_model_refuses_our_backends(tmp_path):
    from transformers import MistralConfig, MistralForCausalLM

    MistralForCausalLM(MistralConfig(vocab_size=32000, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2)).save_pretrained(tmp_path)
    expect(tmp_path, "keeps its own attention", attention="torch")
    model, _ = load_model(tmp_path)
    assert model.config.model_type == "mistral"


def test_cli_prints_one_line_and_exits_2(checkpoint, tmp_path):
    d = copy_of(checkpoint, tmp_path / "c")
    (d / "model.safetensors").unlink()
    run = subprocess.run([sys.executable, str(ROOT / "eval.py"), "inspect", "--model", str(d)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and run.stderr.startswith("error: no weights in")
    ok = subprocess.run([sys.executable, str(ROOT / "eval.py"), "inspect", "--model", str(checkpoint)],
                        capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and "path-eval path" in ok.stdout


@pytest.mark.parametrize("device,dtype,head_dim,expected", [
    ("cuda", torch.bfloat16, 64, "triton"), ("cuda", torch.float16, 128, "triton"), ("cuda", torch.float32, 16, "triton"),
    ("cuda", torch.float64, 64, "torch"), ("cuda", torch.bfloat16, 80, "torch"), ("cuda", torch.bfloat16, 256, "torch"),
    ("cpu", torch.bfloat16, 64, "torch")])
def test_default_backend_is_triton_only_where_the_kernels_run(device, dtype, head_dim, expected):
    """Chosen without a GPU: only the device type, dtype and head dim decide (and triton being installed)."""
    from path_eval.models.attention import default_backend
    assert default_backend(device, dtype, head_dim) == expected


def test_triton_kernels_name_an_unsupported_head_dim():
    from path_eval.kernels.path_attn.fwd import path_attention
    q = torch.zeros(1, 4, 1, 80)
    with pytest.raises(ValueError, match="head dims 16, 32, 64 or 128, not 80"):
        path_attention(q, q, q, scale=1.0)
