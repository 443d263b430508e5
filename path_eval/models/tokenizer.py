"""The checkpoint's own tokenizer, else the paper's: Mistral v1 SentencePiece (32000 pieces).

The Mistral model file ships inside this package (`tokenizers/mistral-v1/`, with its licence and
source). transformers 5 builds a 3-token vocabulary from `LlamaTokenizer(vocab_file=...)` without an
error, so the file is placed in a directory with a `tokenizer_config.json` and loaded from there.
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from path_eval.errors import PathEvalError
from path_eval.locations import cache_dir
from path_eval.package_data import mistral_v1_tokenizer

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")
MISTRAL_V1_CONFIG = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                     "unk_token": "<unk>", "add_bos_token": True, "legacy": False}


def mistral_v1_directory() -> Path:
    """A directory transformers can load the Mistral v1 tokenizer from, made once per file hash."""
    model = (mistral_v1_tokenizer() / "tokenizer.model").read_bytes()
    digest = hashlib.sha256(model).hexdigest()[:16]
    target = cache_dir() / "tokenizers" / f"mistral-v1-{digest}"
    if not (target / "tokenizer_config.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
        (staging / "tokenizer.model").write_bytes(model)
        (staging / "tokenizer_config.json").write_text(json.dumps(MISTRAL_V1_CONFIG, indent=1))
        try:
            staging.rename(target)
        except OSError:  # another process got there first
            shutil.rmtree(staging, ignore_errors=True)
    return target


def load_tokenizer(checkpoint: Path):
    """The checkpoint's tokenizer (else the Mistral v1 one), refused in one line where it does not fit
    the embedding its config.json states. config.json is read first, so that a broken one is named as
    such, not as a tokenizer that cannot be read."""
    from transformers import AutoTokenizer

    from path_eval.models.loading import embedding_rows

    rows = embedding_rows(checkpoint)
    own = any((checkpoint / name).is_file() for name in TOKENIZER_FILES)
    source = checkpoint if own else mistral_v1_directory()
    try:
        with _no_config_type_warning():
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    except Exception as err:  # sentencepiece, tokenizers and json each raise their own on a corrupt file
        present = ", ".join(name for name in TOKENIZER_FILES if (source / name).is_file())
        raise PathEvalError(f"the tokenizer in {source} ({present}) cannot be read ({type(err).__name__}: "
                            f"{str(err).splitlines()[0][:120] if str(err) else 'corrupt file'}): copy the checkpoint's "
                            "tokenizer files again, or remove them to use the Mistral v1 tokenizer") from None
    if len(tokenizer) < 8:
        raise PathEvalError(f"the tokenizer in {source} has only {len(tokenizer)} tokens: it did not load properly "
                            "(a tokenizer.model needs a tokenizer_config.json beside it)")
    if rows is not None:
        check_fits_embedding(len(tokenizer), rows, checkpoint, own)
    return tokenizer


def token_id_lookup(checkpoint: Path) -> Callable[[str], int | None] | None:
    """token -> the id the tokenizer `load_tokenizer(checkpoint)` loads gives it, read without
    transformers (whose import brings torch), so that the plan can check a vocabulary before any
    model loads: the checkpoint's tokenizer.json through the `tokenizers` package, else a
    SentencePiece model (the checkpoint's tokenizer.model, else Mistral v1's) through
    `sentencepiece`. None where the tokenizer is of another form (vocab.json and merges) or its
    files cannot be read: `load_tokenizer` reads those, and names what is wrong with them."""
    from sentencepiece import SentencePieceProcessor
    from tokenizers import Tokenizer

    own = any((checkpoint / name).is_file() for name in TOKENIZER_FILES)
    model = checkpoint / "tokenizer.model" if own else mistral_v1_tokenizer() / "tokenizer.model"
    try:
        if (checkpoint / "tokenizer.json").is_file():
            return Tokenizer.from_file(str(checkpoint / "tokenizer.json")).token_to_id
        if model.is_file():
            return SentencePieceProcessor(model_proto=model.read_bytes()).piece_to_id
    except Exception:  # tokenizers and sentencepiece each raise their own on a corrupt file
        return None
    return None


def unused_rows_allowed(rows: int) -> int:
    """How many embedding rows may lie past the tokenizer's ids: a vocabulary rounded up to a multiple
    of 64 or 128 leaves at most 127 (GPT-NeoX: 50277 tokens, 50304 rows), rows reserved for tokens
    added later a few percent (Phi-2: 50295 tokens, 51200 rows). More than a tenth of the rows unused
    means the tokenizer is another model's: its ids name other pieces than the model learnt."""
    return max(128, rows // 10)


def check_fits_embedding(tokens: int, rows: int, checkpoint: Path, own: bool) -> None:
    """One error line where a tokenizer of `tokens` ids does not fit an embedding of `rows` rows:
    ids past the embedding (an index error, or an out-of-range read on a GPU), or a tokenizer far
    smaller than the vocabulary the model was trained with."""
    whose = (f"the tokenizer in {checkpoint}" if own else
             f"{checkpoint} has no tokenizer files, and the Mistral v1 tokenizer it falls back to")
    fix = (f"put the tokenizer the model was trained with in {checkpoint} (tokenizer.json, or tokenizer.model "
           "with a tokenizer_config.json)")
    if tokens > rows:
        raise PathEvalError(f"{whose} has {tokens} tokens, but the model's embedding has only {rows} rows "
                            f"(config.json vocab_size): ids {rows} and up have no embedding; {fix}")
    if rows - tokens > unused_rows_allowed(rows):
        raise PathEvalError(f"{whose} has {tokens} tokens, far fewer than the {rows} rows of the model's embedding "
                            f"(config.json vocab_size): it is not the tokenizer the model was trained with; {fix}")


class _ConfigTypeWarning(logging.Filter):
    """transformers' "You are using a model of type X to instantiate a model of type ``": an fla
    checkpoint's config type (path_attn, forgetting_transformer) is unknown to transformers, so
    AutoTokenizer reads its config.json as a plain config, which only the tokenizer lookup uses."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "to instantiate a model of type" not in record.getMessage()


@contextmanager
def _no_config_type_warning():
    logger = logging.getLogger("transformers.configuration_utils")
    quiet = _ConfigTypeWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
