"""The lm-eval adapter on its own: generation batching, sliced scoring, registration."""
import numpy as np
import pytest
import torch
from lm_eval.api.instance import Instance

from path_eval.lm import PathEvalLM
from path_eval.lm.scoring import score_batch
from path_eval.models.random_checkpoint import random_model
from path_eval.models.tokenizer import load_tokenizer, mistral_v1_directory
from tests.helpers import LargestTensor, spread_weights


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("path_fox")
    model = random_model("path_fox", "tiny", 0, max_position_embeddings=512)
    spread_weights(model, 0.3)
    model.save_pretrained(path)
    return path


def requests(kind, args_list):
    return [Instance(request_type=kind, doc={}, arguments=a, idx=i) for i, a in enumerate(args_list)]


def test_max_length_from_checkpoint_or_error(checkpoint, tmp_path):
    assert PathEvalLM(str(checkpoint)).max_length == 512
    assert PathEvalLM(str(checkpoint), max_length=128).max_length == 128
    model = random_model("path", "tiny", hidden_size=32, num_hidden_layers=1)
    from path_eval.errors import PathEvalError
    with pytest.raises(PathEvalError, match="pass --max-length"):
        PathEvalLM(model=model, tokenizer=load_tokenizer(mistral_v1_directory()))


def test_batched_generation_gives_the_tokens_of_batch_size_one(checkpoint):
    prompts = ["The grass is green. The sky is", "One", "A much longer prompt about numbers: 1 2 3 4 5 6 7 8 9"]
    gen = {"until": ["\n\n"], "max_gen_toks": 24, "do_sample": False}
    alone = PathEvalLM(str(checkpoint), batch_size=1).generate_until(requests("generate_until", [(p, gen) for p in prompts]))
    batched = PathEvalLM(str(checkpoint), batch_size=3).generate_until(requests("generate_until", [(p, gen) for p in prompts]))
    assert batched == alone
    assert any(len(text) > 0 for text in alone)


def test_stop_strings_cut_the_generation(checkpoint):
    lm = PathEvalLM(str(checkpoint))
    [free] = lm.generate_until(requests("generate_until", [("Once upon a time", {"until": [], "max_gen_toks": 30})]))
    stop = free.strip()[3:6]
    [cut] = lm.generate_until(requests("generate_until", [("Once upon a time", {"until": [stop], "max_gen_toks": 30})]))
    assert cut == free.split(stop)[0]


def test_sliced_scoring_equals_full_log_softmax(checkpoint):
    lm = PathEvalLM(str(checkpoint))
    g = torch.Generator().manual_seed(1)
    inputs = [torch.randint(0, 32000, (n,), generator=g).tolist() for n in (300, 40)]
    targets = [x[1:][-250:] + [7] for x in inputs[:1]] + [inputs[1][-5:]]
    inputs = [inputs[0], inputs[1]]
    from path_eval.lm import scoring
    old, scoring.PROJECTION_ROWS = scoring.PROJECTION_ROWS, 64
    try:
        got = score_batch(lm.model, inputs, targets, lm.pad_id, prefill_chunk=100)
    finally:
        scoring.PROJECTION_ROWS = old
    for x, t, (total, greedy) in zip(inputs, targets, got):
        with torch.no_grad():
            logprobs = torch.log_softmax(lm.model(torch.tensor([x])).logits[0], -1)[-len(t):]
        expected = logprobs.gather(-1, torch.tensor(t)[:, None]).sum().item()
        assert total == pytest.approx(expected, rel=1e-5)
        assert greedy == bool((logprobs.argmax(-1) == torch.tensor(t)).all())


def test_rolling_scoring_never_builds_a_tokens_by_vocab_tensor(checkpoint):
    lm = PathEvalLM(str(checkpoint), max_length=4096, prefill_chunk=1024)
    text = " ".join(f"word{i % 97} and {i}" for i in range(1200))
    with LargestTensor() as seen:
        [total] = lm.loglikelihood_rolling(requests("loglikelihood_rolling", [(text,)]))
    T = len(lm.tok_encode(text))
    assert T > 3000 and total < 0
    assert seen.numel <= 1024 * 32000  # one projection slice, never T x vocab
    assert seen.numel < T * 32000 / 2


def test_registered_for_lm_eval_by_name(checkpoint):
    from lm_eval.api.registry import get_model

    assert get_model("path") is PathEvalLM
    lm = get_model("path").create_from_arg_string(f"pretrained={checkpoint},max_length=256", {"batch_size": 2})
    assert lm.max_length == 256 and lm.batch_size == 2


def test_middle_truncation_keeps_both_ends_only_when_asked(checkpoint, monkeypatch):
    """LongBench's rule (THUDM pred.py): over `truncate_middle` tokens, the first and last halves are
    decoded, joined and encoded again; requests without the option are left as they are."""
    lm = PathEvalLM(str(checkpoint))
    text = " ".join(f"item{i}" for i in range(100))
    whole = lm.tok_encode(text)
    assert 100 < len(whole) < 500 and whole[0] == lm.tokenizer.bos_token_id
    [cut] = (tokens.tolist() for tokens in lm.prompt_tokens([(text, 64, False)]))
    head = lm.tokenizer.decode(whole[:32], skip_special_tokens=True)
    tail = lm.tokenizer.decode(whole[-32:], skip_special_tokens=True)
    assert cut == lm.tokenizer.encode(head + tail) and abs(len(cut) - 65) <= 2
    kept = lm.tokenizer.decode(cut, skip_special_tokens=True)
    assert kept.startswith("item0 item1 item2") and kept.endswith("item98 item99") and "item50 " not in kept
    assert [tokens.tolist() for tokens in lm.prompt_tokens([(text, len(whole), False)])] == [whole]
    given = []
    monkeypatch.setattr(lm, "_generate", lambda prompts, *args: given.extend(prompts) or [[] for _ in prompts])
    lm.generate_until(requests("generate_until", [(text, {"until": [], "max_gen_toks": 4, "truncate_middle": 64}),
                                                  (text, {"until": [], "max_gen_toks": 4})]))
    assert sorted((tokens.tolist() for tokens in given), key=len) == [cut, whole] and lm.truncated_requests == 0


def test_autocast_bf16_runs_float32_weights_under_bf16_autocast(checkpoint):
    """The FoX LongBench scripts' precision: float32 weights, each forward pass under bf16 autocast.
    Its log-likelihoods differ from float32's by bf16 rounding (not by nothing), its weights stay
    float32, the provenance names it; a model whose weights are not float32 is one error line."""
    from path_eval.errors import PathEvalError
    from path_eval.models.identity import model_identity, tokenizer_sha256

    tokens = list(range(3, 200))
    exact = PathEvalLM(str(checkpoint), dtype="float32")
    lm = PathEvalLM(model=exact.model, tokenizer=exact.tokenizer, dtype="autocast-bf16", max_length=512)
    autocast = lm.next_token_nll(tokens)
    difference = (autocast - exact.next_token_nll(tokens)).abs().max()
    assert next(lm.model.parameters()).dtype == torch.float32 and autocast.dtype == torch.float32
    assert 0 < difference < 0.05 * autocast.abs().max()
    identity = model_identity(checkpoint, lm, "cpu", tokenizer_sha256(lm.tokenizer))
    assert identity["dtype"] == "autocast-bf16" and exact.precision == "float32"
    for dtype in (torch.float64, torch.bfloat16):
        with pytest.raises(PathEvalError, match=f"runs float32 weights under autocast; this model's weights are "
                                                f"{str(dtype).removeprefix('torch.')}"):
            PathEvalLM(model=lm.model.to(dtype), tokenizer=lm.tokenizer, dtype="autocast-bf16", max_length=64)


def encoding_texts(bos: str) -> list[str]:
    """Prompts of every shape tok_encode distinguishes: plain, starting with the BOS text, empty,
    spaces at the ends, long, and repeated."""
    long = " ".join(f"Line {i}: the value of x{i % 13} is {i * 37 % 1000}." for i in range(400))
    return ["The grass is green.", f"{bos}already has its BOS", "", "  spaces around  ", long,
            "The grass is green.", f"{bos} {bos}twice", "unicode: naïve café – 東京"]


@pytest.mark.parametrize("tokenizer_source", ["checkpoint", "mistral_v1"])
def test_batch_encoding_gives_each_string_its_own_calls_tokens(checkpoint, tokenizer_source):
    """tok_encode_many against the definition, one tokenizer.encode call per string (lm-eval's hf
    model's rule: no special tokens added where the text starts with the BOS text), on a fast
    tokenizer and on the Mistral v1 SentencePiece model; add_special_tokens=False likewise."""
    lm = PathEvalLM(str(checkpoint))
    if tokenizer_source == "mistral_v1":
        lm.tokenizer = load_tokenizer(mistral_v1_directory())
    bos = lm.tokenizer.bos_token
    texts = encoding_texts(bos)
    expected = [lm.tokenizer.encode(t, add_special_tokens=not t.startswith(bos)) for t in texts]
    assert lm.tok_encode_many(texts) == expected
    assert [lm.tok_encode(t) for t in texts] == expected
    assert lm.tok_encode_many(texts, add_special_tokens=False) == [
        lm.tokenizer.encode(t, add_special_tokens=False) for t in texts]
    assert lm.tok_encode_many([]) == []
    assert expected[0][0] == lm.tokenizer.bos_token_id and expected[1].count(lm.tokenizer.bos_token_id) == 1


def test_generation_prompts_are_encoded_in_one_batch_each_once(checkpoint, monkeypatch):
    """A generate_until call encodes its distinct prompts in one tokenizer call (none per prompt), and
    the model reads the same tokens as one encode call per prompt gives."""
    lm = PathEvalLM(str(checkpoint), batch_size=2, max_length=8192)  # no prompt cut to fit
    texts = encoding_texts(lm.tokenizer.bos_token)[:5] * 2
    own = type(lm.tokenizer).__call__
    batches = []

    def counted(self, text, *args, **kwargs):
        batches.append(len(text) if isinstance(text, list) else 1)
        return own(self, text, *args, **kwargs)

    monkeypatch.setattr(type(lm.tokenizer), "__call__", counted)
    given = []
    monkeypatch.setattr(lm, "_generate", lambda prompts, *args: given.extend(prompts) or [[] for _ in prompts])
    lm.generate_until(requests("generate_until", [(t, {"until": [], "max_gen_toks": 4}) for t in texts]))
    monkeypatch.setattr(type(lm.tokenizer), "__call__", own)
    assert batches == [4, 1]  # four plain prompts, one starting with the BOS text; each once
    bos = lm.tokenizer.bos_token
    assert sorted(tokens.tolist() for tokens in given) == sorted(
        lm.tokenizer.encode(t, add_special_tokens=not t.startswith(bos)) for t in texts)
    # the kept arrays themselves reach the batch: int32, and no one can write into them
    assert all(tokens.dtype == np.int32 and not tokens.flags.writeable for tokens in given)
