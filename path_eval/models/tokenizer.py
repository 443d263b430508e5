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
from path_eval.models.config_file import FLA_MODEL_TYPES, PATH_EVAL_MODEL_TYPE, read_config
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
    from path_eval.models.loading import embedding_rows

    rows = embedding_rows(checkpoint)
    config = checkpoint / "config.json"
    model_type = read_config(config).get("model_type") if config.is_file() else None
    own = any((checkpoint / name).is_file() for name in TOKENIZER_FILES)
    source = checkpoint if own else mistral_v1_directory()
    refuse_backtracking_patterns(source / "tokenizer.json")
    try:
        with _no_config_type_warning():
            tokenizer = tokenizer_loader(source, model_type).from_pretrained(source, local_files_only=True)
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


# The names a tokenizer_config.json gives transformers' generic fast tokenizer (5.x: TokenizersBackend,
# which PreTrainedTokenizerFast names), the class AutoTokenizer picks for them.
GENERIC_FAST_TOKENIZERS = ("PreTrainedTokenizerFast", "TokenizersBackend")
# The model types whose checkpoints AutoTokenizer gives that generic class when their config names it.
# For some others (qwen2, qwen3_5, ...) it overrules the config with the model's own tokenizer class,
# so those keep AutoTokenizer.
GENERIC_TOKENIZER_MODEL_TYPES = (PATH_EVAL_MODEL_TYPE, *FLA_MODEL_TYPES, None)


def tokenizer_loader(source: Path, model_type: str | None):
    """The class to load `source`'s tokenizer with: transformers' generic fast tokenizer itself where
    tokenizer_config.json names it beside a tokenizer.json and the checkpoint is ours or fla's (`model_type`
    from its config.json, None without one; the zoo's), else AutoTokenizer, which picks a model's own
    class. AutoTokenizer picks that same class for such a folder, but first imports
    `transformers.models`, whose lazy structure reads some 1700 source files of every model
    (0.3 s on a 2-core CPU) that this tokenizer never uses."""
    try:
        named = json.loads((source / "tokenizer_config.json").read_text()).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):  # absent or unreadable: AutoTokenizer says what is wrong
        named = None
    if named in GENERIC_FAST_TOKENIZERS and model_type in GENERIC_TOKENIZER_MODEL_TYPES \
            and (source / "tokenizer.json").is_file():
        from transformers import PreTrainedTokenizerFast
        return PreTrainedTokenizerFast
    from transformers import AutoTokenizer
    return AutoTokenizer


def regex_patterns(value) -> list[str]:
    """Every regular expression a tokenizer.json holds (its normalizers' and pre-tokenizers'
    `{"pattern": {"Regex": ...}}`, nested in sequences)."""
    if isinstance(value, list):
        return [p for item in value for p in regex_patterns(item)]
    if not isinstance(value, dict):
        return []
    own = value.get("pattern", {}).get("Regex") if isinstance(value.get("pattern"), dict) else None
    return ([own] if isinstance(own, str) else []) + [p for key, item in value.items() if key != "vocab" and
                                                       key != "merges" for p in regex_patterns(item)]


def nested_repetition(pattern: str) -> str | None:
    """The first group of `pattern` repeated without bound that itself holds a repetition without
    bound, as `(a+)+`: the form of the patterns Oniguruma, the tokenizers' regex engine, backtracks on
    exponentially (every way of splitting a run of `a` between the two repetitions is tried; past its
    retry limit it panics). None where there is no such group. Character classes and escapes are
    skipped. A few such groups are harmless (`(\\s*x)*`, each turn ending at an `x`) and are refused
    too: no tokenizer we know splits with one; alternations that overlap (`(a|a)*`) are not found."""
    starts, inner_unbounded, index = [], [], 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":  # a class: to its closing bracket (a leading ] or ^] is literal)
            index += 2 if pattern[index + 1:index + 2] == "^" else 1
            index += 1 if pattern[index:index + 1] == "]" else 0
            while index < len(pattern) and pattern[index] != "]":
                index += 2 if pattern[index] == "\\" else 1
        elif char == "(":
            starts.append(index)
            inner_unbounded.append(False)
        elif char == ")" and starts:
            start, unbounded = starts.pop(), inner_unbounded.pop()
            repeated = _unbounded_quantifier(pattern, index + 1)
            if unbounded and repeated:
                return pattern[start:index + 1 + repeated]
            if inner_unbounded and (unbounded or repeated):
                inner_unbounded[-1] = True
        elif _unbounded_quantifier(pattern, index) and inner_unbounded:
            inner_unbounded[-1] = True
        index += 1
    return None


def _unbounded_quantifier(pattern: str, index: int) -> int:
    """The length of the unbounded quantifier (`*`, `+`, `{n,}`) at `index`, else 0."""
    if pattern[index:index + 1] in ("*", "+"):
        return 1
    if pattern[index:index + 1] == "{":
        end = pattern.find("}", index)
        body = pattern[index + 1:end] if end > 0 else ""
        if body.endswith(",") and body[:-1].isdigit():
            return end - index + 1
    return 0


def refuse_backtracking_patterns(file: Path) -> None:
    """A tokenizer.json whose regular expressions nest unbounded repetitions is refused before any
    text is tokenized (one line): tokenizing would take time exponential in a run of characters, or
    end in the regex engine's panic. What this refuses, rather than bounding the time each text
    takes, keeps the numbers independent of the machine's speed."""
    if not file.is_file():
        return
    try:
        patterns = regex_patterns(json.loads(file.read_text(encoding="utf-8")))
    except (ValueError, RecursionError):
        return  # not JSON: the tokenizer's own reader names what is wrong with it
    for pattern in patterns:
        group = nested_repetition(pattern)
        if group is not None:
            raise PathEvalError(f"the tokenizer in {file.parent} splits text with the regular expression "
                                f"{pattern[:80]!r}, whose group {group[:40]!r} repeats a repetition: tokenizing "
                                "a long run of characters would take exponential time; fix the pattern (one "
                                "repetition per run) in tokenizer.json, or give the tokenizer the model was trained "
                                "with")


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
