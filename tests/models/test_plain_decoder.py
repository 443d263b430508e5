"""Evaluation loads the harness's families as the plain-torch `CausalDecoder`: a run imports none of
transformers' modeling code, nor what that code pulls (scipy, sympy, torch's compiler), and the
transformers face `PathEvalForCausalLM` computes the same logits from the same weights."""
import json
import subprocess
import sys

import pytest
import torch

from path_eval import load_model
from path_eval.models import CausalDecoder, PathEvalForCausalLM
from tests.helpers import save_tiny_model

HEAVY = ("transformers.modeling_utils", "torch._dynamo", "scipy", "sympy")


def test_loading_and_running_our_model_imports_no_modeling_stack(tmp_path):
    folder = save_tiny_model(tmp_path / "model", "path")
    code = (f"import json, sys, torch, path_eval.lm\n"
            f"from path_eval import load_model\n"
            f"model, tokenizer = load_model({str(folder)!r})\n"
            f"model(torch.tensor([[1, 2, 3]]))\n"
            f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    # the probe can see such an import: the transformers face does pull the modeling code in
    face = subprocess.run([sys.executable, "-c", code.replace("model(torch", "import path_eval.models.pretrained\nmodel(torch")],
                          capture_output=True, text=True, check=True)
    assert "transformers.modeling_utils" in json.loads(face.stdout.strip().splitlines()[-1])


def test_the_transformers_face_is_the_same_network(tmp_path):
    folder = save_tiny_model(tmp_path / "model", "path_fox", seed=3)
    plain, _ = load_model(folder, dtype="float64")
    face = PathEvalForCausalLM.from_pretrained(folder, dtype=torch.float64).eval()
    assert type(plain) is CausalDecoder and isinstance(face, CausalDecoder)
    assert plain.state_dict().keys() == face.state_dict().keys()
    ids = torch.randint(0, plain.config.vocab_size, (2, 40), generator=torch.Generator().manual_seed(0))
    plain.attention_backend = face.attention_backend = "reference"
    assert torch.equal(plain(ids).logits, face(ids).logits)


def test_torch_init_functions_are_torch_own_after_a_load_and_after_an_error_while_building(tmp_path):
    """The loader builds the network with torch.nn.init's functions replaced by no-ops (their meta-
    device call imports torch._dynamo): every later module must still be initialised."""
    from path_eval.models.loading import TORCH_INITIALISERS, uninitialised_modules

    load_model(save_tiny_model(tmp_path / "model", "path"))
    with pytest.raises(RuntimeError, match="while building"):
        with uninitialised_modules():
            layer = torch.nn.Linear(4, 4, device="meta")
            assert torch.nn.init.normal_ is not TORCH_INITIALISERS["normal_"]
            raise RuntimeError("an error while building")
    assert layer.weight.is_meta
    assert all(getattr(torch.nn.init, name) is function for name, function in TORCH_INITIALISERS.items())
    weight = torch.nn.Linear(64, 64).weight  # kaiming-uniform: within +-1/8, std 1/8/sqrt(3), not torch.empty's
    assert weight.abs().max() <= 0.125 and 0.06 < weight.std() < 0.085
