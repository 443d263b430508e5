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


@pytest.mark.parametrize("name", ["path", "flipflop_rope", "a5_rope"])
def test_a_generic_fast_tokenizer_is_the_one_autotokenizer_loads(name):
    """The zoo's tokenizer_config.json names transformers' generic fast tokenizer, which the loader
    takes directly (AutoTokenizer would import every model's structure first): the same class,
    vocabulary, special tokens, settings and encodings as AutoTokenizer's."""
    from transformers import AutoTokenizer

    from path_eval.models.tokenizer import load_tokenizer
    from path_eval.models.zoo import zoo_models

    folder = zoo_models(name)[0]
    ours, theirs = load_tokenizer(folder), AutoTokenizer.from_pretrained(folder, local_files_only=True)
    assert type(ours) is type(theirs)
    assert ours.get_vocab() == theirs.get_vocab() and ours.all_special_tokens == theirs.all_special_tokens
    assert {k: v for k, v in ours.init_kwargs.items() if k != "name_or_path"} == \
        {k: v for k, v in theirs.init_kwargs.items() if k != "name_or_path"}
    texts = ["The grass is green.", "  two  spaces\n\tand a tab", "0 1 1 0 w r i 0 1", "<s> a </s> b"]
    for special in (True, False):
        ids = ours(texts, add_special_tokens=special).input_ids
        assert ids == theirs(texts, add_special_tokens=special).input_ids
        assert ours.batch_decode(ids) == theirs.batch_decode(ids)


@pytest.mark.parametrize("model_type", ["qwen2", "llama"])
def test_a_generic_fast_tokenizer_of_another_model_type_is_left_to_autotokenizer(tmp_path, model_type):
    """AutoTokenizer overrules a config naming the generic class for some model types (qwen2 gets
    Qwen2Tokenizer, with another unk token): only ours and fla's take the direct path."""
    import shutil

    from transformers import AutoTokenizer

    from path_eval.models.tokenizer import tokenizer_loader
    from path_eval.models.zoo import zoo_models

    folder = tmp_path / "checkpoint"
    shutil.copytree(zoo_models("path")[0], folder, ignore=shutil.ignore_patterns("*.safetensors"))
    assert tokenizer_loader(folder, model_type) is AutoTokenizer
    assert tokenizer_loader(folder, "path_attn") is not AutoTokenizer
    if model_type == "qwen2":  # the case that makes the difference, as this transformers has it
        (folder / "config.json").write_text('{"model_type": "qwen2"}')
        assert type(AutoTokenizer.from_pretrained(folder, local_files_only=True)).__name__ == "Qwen2Tokenizer"
