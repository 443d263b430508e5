"""`lm.scoring` against the definition: one full forward's log-softmax, per row."""
import pytest
import torch

from path_eval.lm import scoring
from path_eval.lm.scoring import next_token_nll, score_batch
from tests.helpers import tiny_model


@pytest.mark.parametrize("lengths, chunks_masked", [((300, 250, 300), [False, False, True]),
                                                    ((300, 40, 170), [True, True, True])])
def test_chunked_scoring_equals_each_rows_full_forward(lengths, chunks_masked, monkeypatch):
    """Right-padded rows of several lengths, prefilled in chunks of 100 (a chunk with padding gets
    the mask, said to hold padding, one without gets none: the host knows which) and projected 64
    rows at a time: each row's summed log-probability of its targets, and whether each is the
    argmax, as one forward of that row alone gives them."""
    model = tiny_model("path_fox", seed=4)
    g = torch.Generator().manual_seed(2)
    inputs = [torch.randint(3, 97, (n,), generator=g).tolist() for n in lengths]
    targets = [torch.randint(3, 97, (min(n, 230),), generator=g).tolist() for n in lengths]
    with torch.no_grad():  # the first row's targets its own greedy choices: is_greedy True there
        targets[0] = model(torch.tensor([inputs[0]])).logits[0, -len(targets[0]):].argmax(-1).tolist()
    masked = []
    hidden_states = model.hidden_states

    def recording(input_ids, attention_mask=None, *args, **kwargs):
        masked.append((attention_mask is not None, kwargs.get("mask_has_padding")))
        return hidden_states(input_ids, attention_mask, *args, **kwargs)

    monkeypatch.setattr(model, "hidden_states", recording)
    monkeypatch.setattr(scoring, "PROJECTION_ROWS", 64)
    got = score_batch(model, inputs, targets, pad_id=0, prefill_chunk=100)
    assert masked == [(m, m) for m in chunks_masked]  # a masked chunk is said to hold padding: not read again
    for x, t, (total, greedy) in zip(inputs, targets, got):
        with torch.no_grad():
            logprobs = torch.log_softmax(model(torch.tensor([x])).logits[0].double(), -1)[-len(t):]
        chosen = logprobs.gather(-1, torch.tensor(t)[:, None])
        assert total == pytest.approx(chosen.sum().item(), rel=1e-5)
        assert greedy == bool((logprobs.argmax(-1) == torch.tensor(t)).all())
    assert [greedy for _, greedy in got] == [True, False, False]


def test_next_token_nll_equals_the_full_forwards_log_softmax():
    model = tiny_model("path", seed=6)
    block = torch.randint(3, 97, (333,), generator=torch.Generator().manual_seed(3)).tolist()
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([block])).logits[0].double(), -1)[:-1]
    expected = -logprobs.gather(-1, torch.tensor(block[1:])[:, None])[:, 0]
    assert torch.allclose(next_token_nll(model, block, prefill_chunk=100).double(), expected, rtol=1e-5, atol=1e-5)
