"""fla-format checkpoints (written as fla / flame save them, random weights) load with no conversion
and give the logits of an implementation of the definition written independently of the model
code (tests/definition.py builds every Householder product as a dense matrix)."""
import pytest
import torch

from path_eval.models.generation import generate, prefill
from path_eval.models.loading import load_network  # token ids in: their 97-row embeddings fit no tokenizer
from path_eval.numerics import relative_error
from tests.definition import definition_generate_greedy, definition_logits
from tests.fla_fixtures import write_fla_checkpoint

CASES = [
    ("path", {}),
    ("path", {"low_rank_w": False, "num_kv_heads": 2}),
    ("path", {"omit_low_rank_flag": True, "seed": 5}),
    ("path", {"low_rank_w": False, "omit_low_rank_flag": True, "seed": 6}),
    ("path_fox", {}),
    ("path_fox", {"num_kv_heads": 1, "tie_word_embeddings": True, "hidden_size": 128, "num_heads": 2}),
    ("fox", {}),
    ("fox", {"qk_norm": True, "use_output_gate": True, "qkv_bias": True, "num_kv_heads": 2}),
    ("fox", {"legacy_fox_gate_name": True, "seed": 3}),
    ("rope", {}),
    ("rope", {"qk_norm": True, "qkv_bias": True, "num_kv_heads": 2, "tie_word_embeddings": True,
              "rope_theta": 500.0}),
]
IDS = [f"{v}-{'-'.join(f'{k}={x}' for k, x in o.items()) or 'default'}" for v, o in CASES]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("fla")
    return {name: write_fla_checkpoint(root / name, variant, **options) for name, (variant, options) in zip(IDS, CASES)}


@pytest.mark.parametrize("name", IDS)
def test_logits_equal_the_definition(checkpoints, name):
    tokens = torch.randint(0, 97, (120,), generator=torch.Generator().manual_seed(len(name)))
    expected = definition_logits(checkpoints[name], tokens)
    assert expected.std() > 0.5  # a meaningful comparison, not near-constant logits
    for backend in ("torch", "reference"):
        model = load_network(checkpoints[name], dtype="float64", attention=backend)
        with torch.no_grad():
            assert relative_error(model(tokens[None]).logits[0], expected) <= 1e-10, backend
    model = load_network(checkpoints[name])  # float32, the CPU default
    with torch.no_grad():
        assert relative_error(model(tokens[None]).logits[0].double(), expected) <= 1e-5
        chunked, _ = prefill(model, tokens[None], chunk_size=17, logits_to_keep=0)
        assert relative_error(chunked[0].double(), expected) <= 1e-5


@pytest.mark.parametrize("name", [IDS[0], IDS[4], IDS[6]])
def test_greedy_generation_equals_the_definition(checkpoints, name):
    prompt = torch.randint(3, 97, (30,), generator=torch.Generator().manual_seed(9))
    model = load_network(checkpoints[name], dtype="float64")
    out = generate(model, prompt[None], max_new_tokens=12, eos_token_id=[])
    assert out[0, 30:].tolist() == definition_generate_greedy(checkpoints[name], prompt.tolist(), 12)
