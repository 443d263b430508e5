"""The process-wide store of encodings (`path_eval.lm.encodings`): a later model with the same
tokenizer reads the tokens an earlier one encoded, which must be the tokens a fresh encoding
gives; tokenizers that differ in anything that changes an encoding share nothing."""
import copy

import numpy as np
import pytest
from lm_eval.api.instance import Instance

from path_eval.lm import PathEvalLM
from path_eval.lm.encodings import ENTRY_BYTES, EncodingStore, tokenizer_key
from path_eval.models.tokenizer import load_tokenizer
from path_eval.models.zoo import zoo_folder
from tests.helpers import random_model

TEXTS = ["The grass is green.", " ".join(f"Line {i}: x{i % 7} = {i * 37 % 1000}." for i in range(300)),
         "", "unicode: naïve café – 東京", "The grass is green."]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("path_tiny")
    random_model("path", "tiny", 0, max_position_embeddings=4096).save_pretrained(path)
    return path


def counted_calls(monkeypatch, tokenizer) -> list[int]:
    """The texts of each call of the tokenizer's class from now on."""
    own, calls = type(tokenizer).__call__, []

    def counted(self, text, *args, **kwargs):
        calls.append(len(text) if isinstance(text, list) else 1)
        return own(self, text, *args, **kwargs)

    monkeypatch.setattr(type(tokenizer), "__call__", counted)
    return calls


def generation_prompts(lm, monkeypatch, texts) -> list[list[int]]:
    """The tokens generate_until hands the model for each text (the model itself not run)."""
    given = []
    monkeypatch.setattr(lm, "_generate", lambda prompts, *args: given.extend(prompts) or [[] for _ in prompts])
    lm.generate_until([Instance(request_type="generate_until", doc={}, arguments=(t, {"until": [], "max_gen_toks": 4}),
                                idx=i) for i, t in enumerate(texts)])
    return [tokens.tolist() for tokens in given]


def test_a_later_model_with_the_same_tokenizer_encodes_nothing_and_gets_the_same_tokens(checkpoint, monkeypatch):
    first = PathEvalLM(str(checkpoint), batch_size=2)
    expected = sorted(first.tokenizer.encode(t) for t in TEXTS)
    assert sorted(generation_prompts(first, monkeypatch, TEXTS)) == expected
    later = PathEvalLM(str(checkpoint), batch_size=2)  # its own tokenizer, loaded again
    assert later.tokenizer is not first.tokenizer and later.tokenizer_key == first.tokenizer_key
    calls = counted_calls(monkeypatch, later.tokenizer)
    assert sorted(generation_prompts(later, monkeypatch, TEXTS)) == expected
    assert calls == []
    # the same texts without special tokens are other encodings: encoded, and as the definition gives them
    assert later.tok_encode_many(TEXTS, add_special_tokens=False) == [
        later.tokenizer.encode(t, add_special_tokens=False) for t in TEXTS]
    assert calls == [len(TEXTS)]  # every text looked up before any is encoded: the repeated one too


def test_many_empty_texts_fill_the_store_too():
    """An entry costs its key and array besides its tokens: empty encodings cannot grow the store
    past its cap."""
    store = EncodingStore(cap=10 * ENTRY_BYTES)
    store.encode("k", None, [f"text {i}" for i in range(50)], lambda texts: [[] for _ in texts])
    assert len(store) == 10 and store.bytes_kept == 10 * ENTRY_BYTES


def test_a_tokenizer_last_used_with_padding_keys_as_before(checkpoint):
    """The backend's serialised form holds the last call's padding; every encoding here resets it."""
    tokenizer = PathEvalLM(str(checkpoint)).tokenizer
    key = tokenizer_key(tokenizer)
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer(["a", "a longer text"], padding=True, truncation=True, max_length=3)
    assert tokenizer_key(tokenizer) == key


def test_tokenizers_that_encode_differently_have_different_keys(checkpoint):
    mistral = PathEvalLM(str(checkpoint)).tokenizer
    zoo = load_tokenizer(zoo_folder() / "path")
    assert tokenizer_key(zoo) == tokenizer_key(load_tokenizer(zoo_folder() / "fox"))  # the zoo's one tokenizer
    assert tokenizer_key(zoo) != tokenizer_key(mistral)
    assert zoo.encode(TEXTS[1]) != mistral.encode(TEXTS[1])
    split = copy.deepcopy(mistral)
    split.split_special_tokens = True  # "<s>" in a text becomes ordinary pieces
    assert split.encode("<s>x", add_special_tokens=False) != mistral.encode("<s>x", add_special_tokens=False)
    assert tokenizer_key(split) != tokenizer_key(mistral)
    no_bos = copy.deepcopy(mistral)
    no_bos.backend_tokenizer.post_processor = None  # no BOS added: another backend definition
    assert no_bos.encode("x") != mistral.encode("x")
    assert tokenizer_key(no_bos) != tokenizer_key(mistral)


class _SlowTokenizer:
    is_fast = False


def test_a_slow_tokenizer_shares_nothing():
    assert tokenizer_key(_SlowTokenizer()) is None
    store, calls = EncodingStore(), []

    def encode(texts):
        calls.append(list(texts))
        return [[len(t)] for t in texts]

    assert store.encode(None, None, ["ab", "c"], encode) == [[2], [1]]
    assert store.encode(None, None, ["ab", "c"], encode) == [[2], [1]]
    assert calls == [["ab", "c"], ["ab", "c"]] and len(store) == 0


def test_the_cap_keeps_the_first_texts_and_every_answer_is_the_encoding():
    calls = []

    def encode(texts):  # a stand-in whose tokens are the characters' code points
        calls.append(list(texts))
        return [[ord(c) for c in t] for t in texts]

    store = EncodingStore(cap=2 * ENTRY_BYTES + 4 * 7)
    texts = ["abc", "defg", "hi", "abc"]
    assert store.encode("k", None, texts, encode) == encode(texts)
    calls.clear()
    assert store.bytes_kept == 2 * ENTRY_BYTES + 4 * 7 and len(store) == 2  # "hi" would pass the cap: not kept
    assert store.encode("k", None, texts, encode) == encode(texts)
    assert calls[0] == ["hi"]  # the kept ones were not encoded again
    assert store.encode("other", None, ["abc"], encode) == [[97, 98, 99]]  # another key: encoded
    assert calls[2] == ["abc"]
    assert store.encode("k", False, ["abc"], encode) == [[97, 98, 99]] and calls[3] == ["abc"]  # another option
    store.clear()
    assert len(store) == 0 and store.bytes_kept == 0


@pytest.mark.parametrize("key", ["k", None])
def test_arrays_are_the_encodings_read_only_and_a_hit_hands_out_the_kept_array(key):
    def encode(texts):
        return [[ord(c) for c in t] for t in texts]

    store = EncodingStore()
    texts = ["abc", "", "defg"]
    fresh = store.encode(key, None, texts, encode, arrays=True)
    again = store.encode(key, None, texts, encode, arrays=True)
    for tokens, hit, want in zip(fresh, again, encode(texts)):
        assert tokens.dtype == np.int32 and tokens.tolist() == want and not tokens.flags.writeable
        assert (hit is tokens) == (key is not None)  # kept: the same array, no copy
        with pytest.raises(ValueError):
            tokens[:1] = 0
    assert store.encode(key, None, texts, encode) == encode(texts)  # lists still, where asked for
