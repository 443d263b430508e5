"""Checkpoints whose parts do not belong together are refused in one line, never loaded with
tensors started from random values: config.json naming another architecture than its weights,
weights missing a tensor the architecture needs or holding one it has no place for, mis-shaped
tensors, a tokenizer that does not fit the embedding, weight files that are truncated or pickled
objects, a config.json that describes no model (named as config.json, not as the tokenizer), and a
local model path that does not exist (named as a folder, not as a hub model to download). Each
case is built here from a small transformers Llama or one of our random models, with a checkpoint
that loads beside it, so that a refusal is the mismatch and not the builder."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from path_eval.cli import main
from path_eval.models.random_checkpoint import random_model
from path_eval.models.zoo import zoo_models
from tests.cli.test_bad_inputs import OFFLINE_VARIABLES, assert_one_error_line, left_behind
from tests.helpers import run_cli

LLAMA = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
             max_position_embeddings=256)
Q_PROJ = "model.layers.0.self_attn.q_proj.weight"


def llama(folder: Path, **config) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**(LLAMA | {"vocab_size": 32000} | config))).save_pretrained(folder)
    return folder


def changed(source: Path, folder: Path, change) -> Path:
    shutil.copytree(source, folder)
    change(folder)
    return folder


def edit_config(folder: Path, **fields) -> None:
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(raw | fields))


def edit_weights(folder: Path, drop=(), add=None) -> None:
    state = {k: v for k, v in load_file(folder / "model.safetensors").items() if k not in drop}
    save_file(state | (add or {}), folder / "model.safetensors", metadata={"format": "pt"})


def pickled(folder: Path, content) -> None:
    (folder / "model.safetensors").unlink()
    torch.save(content, folder / "pytorch_model.bin")


def own_tokenizer_of(model: Path):
    """The zoo's own 4096-token tokenizer, copied into `model`."""
    def copy(folder: Path) -> None:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(model / name, folder / name)
    return copy


class RunsCode:
    """A pickled object whose unpickling would create a file: the marker of code run from weights."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    root = tmp_path_factory.mktemp("mismatch")
    good = llama(root / "llama")
    weights = load_file(good / "model.safetensors")
    ours = root / "ours"
    random_model("path", "tiny", hidden_size=32, num_hidden_layers=1).save_pretrained(ours)
    zoo = zoo_models("path")[0]
    paths = {"ROOT": root, "LLAMA": good, "OURS": ours, "MARKER": root / "code-ran"}
    cases = {
        # config.json names another architecture than its weights
        "bert_over_llama": (good, lambda f: (f / "config.json").write_text(json.dumps(
            {"model_type": "bert", "architectures": ["BertForMaskedLM"], "vocab_size": 32000, "hidden_size": 32,
             "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}))),
        "bert_decoder_over_llama": (good, lambda f: (f / "config.json").write_text(json.dumps(
            {"model_type": "bert", "architectures": ["BertLMHeadModel"], "is_decoder": True, "vocab_size": 32000,
             "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}))),
        "gpt2_over_llama": (good, lambda f: (f / "config.json").write_text(json.dumps(
            {"model_type": "gpt2", "vocab_size": 32000, "n_embd": 32, "n_layer": 1, "n_head": 2,
             "n_positions": 256, "bos_token_id": 1, "eos_token_id": 2}))),
        "classifier": (good, lambda f: edit_config(f, architectures=["LlamaForSequenceClassification"])),
        "fox_config_over_path": (ours, lambda f: edit_config(f, attention="fox")),
        # weights missing a tensor, or holding one the architecture has no place for
        "no_q_proj": (good, lambda f: edit_weights(f, drop=[Q_PROJ])),
        "no_lm_head": (good, lambda f: edit_weights(f, drop=["lm_head.weight"])),
        "extra_tensor": (good, lambda f: edit_weights(f, add={"model.layers.0.mlp.extra.weight": torch.zeros(4)})),
        "ours_no_q_proj": (ours, lambda f: edit_weights(f, drop=["model.layers.0.attn.q_proj.weight"])),
        "shape": (good, lambda f: edit_weights(f, add={Q_PROJ: torch.zeros(16, 32)})),
        # a buffer that old checkpoints saved: not a mismatch
        "old_inv_freq": (good, lambda f: edit_weights(
            f, add={"model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(8)})),
        # weight files that do not open as tensors by name
        "truncated": (good, lambda f: (f / "model.safetensors").write_bytes(
            (good / "model.safetensors").read_bytes()[:5000])),
        "pickled": (good, lambda f: pickled(f, weights)),
        "pickled_truncated": (good, lambda f: (pickled(f, weights), (f / "pytorch_model.bin").write_bytes(
            (f / "pytorch_model.bin").read_bytes()[:3000]))),
        "pickled_code": (good, lambda f: pickled(f, {Q_PROJ: RunsCode(paths["MARKER"])})),
        "pickled_list": (good, lambda f: pickled(f, [weights[Q_PROJ]])),
        "pickled_nested": (good, lambda f: pickled(f, {"state_dict": weights})),
        # config.json that is JSON but describes no model (beside tokenizer files that read it too)
        "string_size": (good, lambda f: (own_tokenizer_of(zoo)(f), edit_config(f, hidden_size="thirty-two"))),
        "rope_number": (good, lambda f: (own_tokenizer_of(zoo)(f), edit_config(f, rope_parameters=5))),
        "ours_zero_heads": (ours, lambda f: edit_config(f, num_heads=0)),
        "ours_unknown_variant": (ours, lambda f: edit_config(f, attention="flash")),
        # tokenizers that do not fit the embedding
        "small_tokenizer": (good, own_tokenizer_of(zoo)),
    }
    for name, (source, change) in cases.items():
        paths[name.upper()] = changed(source, root / name, change)
    paths["TIED"] = llama(root / "tied", tie_word_embeddings=True)
    paths["PADDED_64"] = llama(root / "padded-64", vocab_size=32064)  # the Mistral v1 tokenizer, rounded up
    paths["VOCAB_40000"] = llama(root / "vocab-40000", vocab_size=40000)
    random_model("path", "tiny", hidden_size=32, num_hidden_layers=1, vocab_size=97).save_pretrained(root / "vocab-97")
    paths["VOCAB_97"] = root / "vocab-97"
    random_model("path", "tiny", hidden_size=32, num_hidden_layers=1, vocab_size=4000).save_pretrained(root / "v4000")
    own_tokenizer_of(zoo)(root / "v4000")
    paths["ZOO_TOKENIZER_OVER_4000"] = root / "v4000"
    (root / "ckpt").mkdir()
    paths["FILE"] = good / "config.json"
    return paths


INSPECT = ["inspect", "--model"]
RUN = ["run", "--suite", "phonebook", "--limit", "1", "--model"]

# (arguments, fragments the one error line must hold); every case exits 2
CASES = [
    ([*INSPECT, "{BERT_OVER_LLAMA}"], ["names the architecture BertForMaskedLM", "not a causal language model"]),
    ([*RUN, "{BERT_OVER_LLAMA}"], ["BertForMaskedLM"]),
    ([*INSPECT, "{BERT_DECODER_OVER_LLAMA}"], ["lack tensors", "bert.", "no place for", "model.embed_tokens.weight"]),
    ([*INSPECT, "{GPT2_OVER_LLAMA}"], ["config.json's gpt2 model", "transformer.h.0.", "no place for",
                                      "model.embed_tokens.weight"]),
    ([*INSPECT, "{CLASSIFIER}"], ["LlamaForSequenceClassification"]),
    ([*INSPECT, "{FOX_CONFIG_OVER_PATH}"], ["lack tensors", "attn.f_proj", "no place for", "attn.bt_proj"]),
    ([*INSPECT, "{NO_Q_PROJ}"], [f"lack tensors that config.json's llama model implies (1, e.g. {Q_PROJ})"]),
    ([*RUN, "{NO_Q_PROJ}"], [Q_PROJ]),
    ([*INSPECT, "{NO_LM_HEAD}"], ["(1, e.g. lm_head.weight)"]),
    ([*INSPECT, "{EXTRA_TENSOR}"], ["no place for (1, e.g. model.layers.0.mlp.extra.weight)"]),
    ([*RUN, "{OURS_NO_Q_PROJ}"], ["(1, e.g. model.layers.0.attn.q_proj.weight)"]),
    ([*INSPECT, "{SHAPE}"], [f"{Q_PROJ} in", "has shape [16, 32] but config.json implies [32, 32]"]),
    ([*INSPECT, "{TRUNCATED}"], ["model.safetensors cannot be read as weights", "truncated"]),
    ([*RUN, "{TRUNCATED}"], ["model.safetensors cannot be read as weights"]),
    ([*INSPECT, "{PICKLED_TRUNCATED}"], ["pytorch_model.bin cannot be read as weights"]),
    ([*RUN, "{PICKLED_CODE}"], ["pytorch_model.bin holds pickled objects other than tensors", "could run code"]),
    ([*INSPECT, "{PICKLED_LIST}"], ["pytorch_model.bin holds a pickled list, not tensors by name"]),
    ([*INSPECT, "{PICKLED_NESTED}"], ["pytorch_model.bin holds 'state_dict': dict, not tensors by name"]),
    ([*INSPECT, "{STRING_SIZE}"], ["string_size/config.json does not describe a model", "hidden_size"]),
    ([*RUN, "{STRING_SIZE}"], ["string_size/config.json does not describe a model", "hidden_size"]),
    ([*INSPECT, "{ROPE_NUMBER}"], ["rope_number/config.json does not describe a model", "rope_parameters"]),
    ([*RUN, "{OURS_ZERO_HEADS}"], ["ours_zero_heads/config.json does not describe a model"]),
    ([*INSPECT, "{OURS_UNKNOWN_VARIANT}"], ["config.json does not describe a model", "'flash'"]),
    ([*RUN, "{SMALL_TOKENIZER}"], ["has 4096 tokens, far fewer than the 32000 rows",
                                   "small_tokenizer (tokenizer.json"]),
    ([*INSPECT, "{VOCAB_40000}"], ["no tokenizer files", "Mistral v1", "32000 tokens, far fewer than the 40000 rows"]),
    ([*RUN, "{VOCAB_97}"], ["has 32000 tokens, but the model's embedding has only 97 rows"]),
    ([*INSPECT, "{ZOO_TOKENIZER_OVER_4000}"], ["the tokenizer in",
                                              "4096 tokens, but the model's embedding has only 4000"]),
    # local paths that do not exist: a folder, never a hub model to download
    ([*INSPECT, "ckpt/step-9"], ["model ckpt/step-9 is not a directory (ckpt holds no step-9)"]),
    ([*RUN, "ckpt/step-9/"], ["ckpt holds no step-9"]),
    ([*INSPECT, "{ROOT}/ckpt/deeper/still"], ["ckpt holds no deeper/still"]),
    ([*RUN, "./absent/step-9"], ["model ./absent/step-9 is not a directory (no such folder)"]),
    ([*INSPECT, "{FILE}"], ["is not a directory but a file"]),
]


def expand(arguments: list[str], paths: dict) -> list[str]:
    for name, path in sorted(paths.items(), key=lambda item: -len(item[0])):
        arguments = [argument.replace("{" + name + "}", str(path)) for argument in arguments]
    return arguments


@pytest.fixture
def cli(place, tmp_path, monkeypatch, capsys):
    """`main(argv)` in `place`'s folder (so that `ckpt/...` is relative to it), offline as a user's
    machine is: (exit code, stdout, stderr)."""
    monkeypatch.chdir(place["ROOT"])
    for name in OFFLINE_VARIABLES:  # main sets them; restored after the test
        monkeypatch.delenv(name, raising=False)

    def call(arguments: list[str]):
        argv = expand(arguments, place)
        if argv[0] == "run":
            argv += ["--out", str(tmp_path / "out")]
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return call


@pytest.mark.parametrize("arguments, fragments", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_a_mismatched_checkpoint_is_one_line_and_exit_2(arguments, fragments, cli, place, tmp_path):
    code, out, err = cli(arguments)
    assert code == 2 and "Traceback" not in out
    line = assert_one_error_line(err, fragments[0])
    for fragment in fragments[1:]:
        assert fragment in line, line
    assert "download" not in line or "hub model" in line
    assert not place["MARKER"].exists(), "unpickling the weights ran code"
    assert not left_behind(tmp_path) and not left_behind(place["ROOT"])


@pytest.mark.parametrize("name", ["LLAMA", "TIED", "OLD_INV_FREQ", "PICKLED", "PADDED_64", "OURS"])
def test_what_belongs_together_loads(name, cli, place):
    """Beside the refusals: the same builders' checkpoints load, with what is tied or a buffer by
    definition absent (a tied lm_head, an old per-layer inv_freq), pickled weights, and an embedding
    rounded up past its tokenizer."""
    code, out, err = cli([*INSPECT, f"{{{name}}}"])
    assert code == 0, err
    assert "tokenizer" in out and "error" not in err


@pytest.mark.parametrize("name, fragment", [("BERT_OVER_LLAMA", "BertForMaskedLM"), ("NO_Q_PROJ", Q_PROJ),
                                            ("SHAPE", "has shape [16, 32]"),
                                            ("PICKLED_TRUNCATED", "pytorch_model.bin")])
def test_the_whole_stderr_is_the_one_line(name, fragment, place, tmp_path):
    """In a process of its own, where transformers' own logging and progress bars reach stderr too."""
    result = run_cli(*RUN, str(place[name]), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert_one_error_line(result.stderr, fragment)
    assert not left_behind(tmp_path)


def test_a_missing_tensor_is_not_loaded_from_random_values(place):
    """The Python API refuses as the command line does (load_model, not only `eval.py`)."""
    from path_eval import load_model
    from path_eval.errors import PathEvalError

    with pytest.raises(PathEvalError, match="lack tensors"):
        load_model(place["NO_Q_PROJ"])
    model, _ = load_model(place["LLAMA"])
    assert torch.equal(model.state_dict()[Q_PROJ], load_file(place["LLAMA"] / "model.safetensors")[Q_PROJ])
