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
    from transformers import AutoTokenizer

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
    return tokenizer


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
