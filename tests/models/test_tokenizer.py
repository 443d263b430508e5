"""The default tokenizer: the shipped Mistral v1 SentencePiece model, loaded through transformers,
encodes as sentencepiece itself does (except where transformers' conversion splits whitespace runs
differently, pinned below so a change in it shows)."""
import hashlib
import re

import pytest
import sentencepiece

from path_eval.package_data import mistral_v1_tokenizer

AGREE = ["Hello world.", "line one\nline two\n\n", "12345 67.89", "ünïcödé façade — naïve 東京 🙂",
         "The quick brown fox jumps over the lazy dog. It wasn't me!", ""]
# transformers 5's LlamaTokenizer (a tokenizers BPE converted from the model, legacy=False) drops a
# leading space and merges runs of spaces into one piece where sentencepiece keeps "▁" + "▁word".
DIFFER = [" leading space", "two  spaces", "def f(x):\n    return x\n"]


@pytest.fixture(scope="module")
def sentencepiece_model():
    return sentencepiece.SentencePieceProcessor(model_file=str(mistral_v1_tokenizer() / "tokenizer.model"))


@pytest.mark.parametrize("text", AGREE)
def test_encodes_as_sentencepiece(tokenizer, sentencepiece_model, text):
    assert tokenizer.encode(text) == [sentencepiece_model.bos_id()] + sentencepiece_model.encode(text)
    assert tokenizer.decode(tokenizer.encode(text), skip_special_tokens=True) == text


@pytest.mark.xfail(strict=True, reason="a known deviation, documented in docs/models.md: transformers 5.24 and 5.25's "
                   "conversion of the SentencePiece model splits whitespace runs unlike sentencepiece; strict, so a "
                   "transformers release that fixes it turns this into a failure and the mark is removed")
@pytest.mark.parametrize("text", DIFFER)
def test_whitespace_runs_encode_as_sentencepiece(tokenizer, sentencepiece_model, text):
    assert tokenizer.encode(text) == [sentencepiece_model.bos_id()] + sentencepiece_model.encode(text)


def test_the_shipped_model_is_the_one_its_readme_names(sentencepiece_model, tokenizer):
    folder = mistral_v1_tokenizer()
    named = re.search(r"sha256 `([0-9a-f]{64})`", (folder / "README.md").read_text()).group(1)
    assert hashlib.sha256((folder / "tokenizer.model").read_bytes()).hexdigest() == named
    assert sentencepiece_model.get_piece_size() == len(tokenizer) == 32000
    assert "Apache License" in (folder / "LICENSE").read_text()
