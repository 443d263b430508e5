"""The adapter on a GPU gives the CPU's answers (skipped where no CUDA GPU is present)."""
import pytest
import torch
from lm_eval.api.instance import Instance

from path_eval.lm import PathEvalLM
from path_eval.models.random_checkpoint import random_model

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_cuda_scores_and_generates_like_cpu(tmp_path):
    random_model("path_fox", "tiny", 0, hidden_size=128, max_position_embeddings=1024).save_pretrained(tmp_path)
    pairs = [("The capital of France is", " Paris"), ("1 2 3 4", " 5 6")]
    prompts = [("Once upon a time", {"until": ["\n"], "max_gen_toks": 16}), ("A", {"until": ["\n"], "max_gen_toks": 16})]
    out = {}
    for device in ("cpu", "cuda"):
        lm = PathEvalLM(str(tmp_path), device=device, dtype="float32", batch_size=2)
        out[device] = (lm.loglikelihood([Instance("loglikelihood", {}, p, i) for i, p in enumerate(pairs)]),
                       lm.generate_until([Instance("generate_until", {}, p, i) for i, p in enumerate(prompts)]))
    for (a, _), (b, _) in zip(out["cpu"][0], out["cuda"][0]):
        assert a == pytest.approx(b, rel=1e-4)
    assert out["cpu"][1] == out["cuda"][1]


@pytest.mark.parametrize("attention", ["torch", "triton"])
def test_autocast_bf16_on_cuda_stays_near_float32(tmp_path, attention):
    """--dtype autocast-bf16 on a GPU: float32 weights under bf16 autocast, through either backend;
    the log-likelihoods move by bf16 rounding from float32's, not more and not by nothing."""
    random_model("path_fox", "tiny", 0, hidden_size=128, max_position_embeddings=1024).save_pretrained(tmp_path)
    tokens = list(range(3, 600))
    nll = {dtype: PathEvalLM(str(tmp_path), device="cuda", dtype=dtype, attention=attention).next_token_nll(tokens)
           for dtype in ("float32", "autocast-bf16")}
    lm = PathEvalLM(str(tmp_path), device="cuda", dtype="autocast-bf16", attention=attention)
    assert lm.precision == "autocast-bf16" and next(lm.model.parameters()).dtype == torch.float32
    difference = (nll["autocast-bf16"] - nll["float32"]).abs().max()
    assert 0 < difference < 0.05 * nll["float32"].abs().max()


def test_triton_scoring_takes_one_pass_when_it_fits_and_chunks_when_not(tmp_path, monkeypatch):
    """On the Triton backend a block that fits the GPU's free memory is scored in one pass with no
    cache, one that does not in chunks on the cache; both give the same log-likelihoods."""
    from path_eval.lm import scoring

    random_model("path_fox", "tiny", 0, hidden_size=128, max_position_embeddings=4096).save_pretrained(tmp_path)
    lm = PathEvalLM(str(tmp_path), device="cuda", dtype="float32", attention="triton", prefill_chunk=1024)
    tokens = torch.randint(3, 32000, (3000,), generator=torch.Generator().manual_seed(1)).tolist()
    assert scoring.one_pass_fits(lm.model, torch.tensor([tokens], device="cuda"))
    one_pass = lm.next_token_nll(tokens)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1, 1))
    assert not scoring.one_pass_fits(lm.model, torch.tensor([tokens], device="cuda"))
    chunked = lm.next_token_nll(tokens)
    assert torch.allclose(one_pass, chunked, rtol=1e-4, atol=1e-4)
