"""The zoo's tokenizers, saved into each checkpoint folder (tokenizer.json + tokenizer_config.json)
so that `load_model` uses them.

Language models: a 4096-piece byte-level BPE trained with Hugging Face `tokenizers` on the
training mixture (`corpus.tokenizer_training_text`); training is deterministic for a fixed input
order. A 32,000-piece embedding would dominate a hidden-128 model: at 4096 pieces the embedding
is a quarter of the parameters. The synthetic tasks' models (flip-flop, A5, MQRAR-N): a word-level
vocabulary of the task's own symbols (`SymbolVocabulary.symbols`), one id each.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from training import run_cli

VOCAB_SIZE = 4096
PAD, BOS, EOS = "<pad>", "<s>", "</s>"
SPECIAL_TOKENS = [PAD, BOS, EOS]  # ids 0, 1, 2: fla's default bos 1 and eos 2
CONFIG = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS, "pad_token": PAD,
          "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
          "model_max_length": 1_000_000}


def train_bpe(texts) -> "tokenizers.Tokenizer":
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def symbol_tokenizer(symbols: tuple[str, ...]) -> "tokenizers.Tokenizer":
    """Symbol i is id i; the symbols include PAD, which stands for any unknown word."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({symbol: i for i, symbol in enumerate(symbols)}, unk_token=PAD))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins the symbols with spaces
    return tokenizer


def save(tokenizer, folder: Path) -> None:
    """tokenizer.json and tokenizer_config.json (bos, eos, pad) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(CONFIG, indent=1) + "\n")


def sha256(folder: Path) -> str:
    return hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()


def main() -> None:
    from training.corpus import add_source_arguments, tokenizer_training_text

    parser = argparse.ArgumentParser(description="Train the zoo's 4096-piece BPE on the training mixture.")
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, help="folder for tokenizer.json and tokenizer_config.json")
    args = parser.parse_args()
    out = Path(args.out)
    save(train_bpe(tokenizer_training_text(Path(args.data_dir), Path(args.code_dir))), out)
    print(json.dumps({"tokenizer": str(out), "sha256": sha256(out)}))


if __name__ == "__main__":
    run_cli(main)
