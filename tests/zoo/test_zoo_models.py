"""The committed zoo: each model loads with `load_model` on the CPU, generates, and beats chance;
its tokenizer round-trips text."""
import json
import math
from pathlib import Path

import pytest
import torch

from path_eval import load_model
from path_eval.models import CausalDecoder
from path_eval.models.generation import generate
from path_eval.tasks import flipflop

MODELS = Path(__file__).resolve().parents[2] / "path_eval" / "zoo" / "models"
HELDOUT_FILE = MODELS.parent / "heldout" / "jack_sheppard_tail.txt"
LM = ["rope", "fox", "path", "path_fox"]
FLIPFLOP = [f"flipflop_{v}" for v in LM]
TEXT = 'def f(x):\n    return {"naïve": x + 1}  # ✓\nOne of the special magic numbers for cold-river is: 4821937.\n'


def greedy(model, ids: torch.Tensor, new: int) -> torch.Tensor:
    if isinstance(model, CausalDecoder):
        return generate(model, ids, max_new_tokens=new)
    return model.generate(ids, max_new_tokens=new, do_sample=False, pad_token_id=model.config.pad_token_id)


@pytest.mark.parametrize("name", LM)
def test_language_model_loads_generates_and_beats_chance(name):
    model, tokenizer = load_model(MODELS / name)
    ids = torch.tensor([tokenizer(HELDOUT_FILE.read_text()[:4000])["input_ids"][:256]])
    out = greedy(model, ids[:, :32], 8)
    assert out.shape == (1, 40) and (out[:, :32] == ids[:, :32]).all()
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].float()
    loss = torch.nn.functional.cross_entropy(logits, ids[0, 1:]).item()
    assert loss < 0.6 * math.log(4096), loss  # chance is ln 4096 = 8.3; the card's held-out loss is about 3.2


@pytest.mark.parametrize("name", FLIPFLOP)
def test_flipflop_model_loads_and_reads_most_bits(name):
    model, tokenizer = load_model(MODELS / name)
    tokens = flipflop.generate(4, flipflop.SPLITS["in"], seed=99)
    with torch.no_grad():
        predictions = model(torch.from_numpy(tokens)).logits.argmax(-1).numpy()
    assert flipflop.read_error_rate(tokens, predictions) < 0.4  # chance is 0.5; RoPE's is about 0.29
    prompt = torch.tensor([tokenizer("w 1 i 0 r")["input_ids"]])
    assert greedy(model, prompt, 1).shape == (1, 6)


@pytest.mark.parametrize("name", LM + FLIPFLOP)
def test_tokenizer_round_trips_and_matches_the_config(name):
    model, tokenizer = load_model(MODELS / name)
    text = "w 1 i 0 r 1 w 0 r 0" if name.startswith("flipflop") else TEXT
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert len(tokenizer) == model.config.vocab_size
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id) == (model.config.bos_token_id, model.config.eos_token_id)


def test_the_four_language_models_share_one_tokenizer_data_and_plan():
    tokenizers = {(MODELS / n / "tokenizer.json").read_bytes() for n in LM}
    assert len(tokenizers) == 1
    cards = {n: json.loads((MODELS / n / "model_card.json").read_text()) for n in LM}
    plans = {(c["planned_steps"], c["batch_windows"], c["training_length"], c["seed"], c["data"]["sha256"],
              json.dumps(c["lr_schedule"]), json.dumps(c["optimizer"])) for c in cards.values()}
    assert len(plans) == 1


def test_a_model_that_stopped_short_of_its_budget_says_so():
    """The same budget was planned for every variant; the cards record where a run's deadline cut it
    (PaTH and PaTH-FoX, eight processes sharing the GPU: path_eval/zoo/README.md), and its README says so."""
    for name in LM:
        card = json.loads((MODELS / name / "model_card.json").read_text())
        assert card["tokens"] == card["steps"] * card["batch_windows"] * card["training_length"]
        assert card["stopped_at_deadline"] == (card["steps"] < card["planned_steps"])
        if card["stopped_at_deadline"]:
            assert "Stopped at the run's deadline" in (MODELS / name / "README.md").read_text()


def test_the_zoo_fits_its_budget():
    """Every weight file together at most 24 MB: beside the GPU image's wheels within its 64 MiB carry."""
    assert sum(f.stat().st_size for f in MODELS.rglob("*.safetensors")) <= 24_000_000
