"""What identifies a loaded model: its config, weights and tokenizer hashed, with the settings that
change its numbers. The runner keys a model's resume cache by it and the results stage records it."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from path_eval.atomic_files import write_json_atomic
from path_eval.data import file_sha256
from path_eval.locations import cache_dir


def weights_sha256(files: list[Path]) -> str:
    """sha256 over the weight files' hashes; each file's hash is cached by (path, size, mtime)."""
    memo_file = cache_dir() / "weight-hashes.json"
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError, RecursionError):
        memo = {}
    if not isinstance(memo, dict):  # a memo another program wrote over: hashed again
        memo = {}
    digest = hashlib.sha256()
    changed = False
    for file in files:
        stat = file.stat()
        key = f"{file.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        if not isinstance(memo.get(key), str):
            memo[key], changed = file_sha256(file), True
        digest.update(f"{file.name}:{memo[key]}\n".encode())
    if changed:
        write_json_atomic(memo, memo_file)
    return digest.hexdigest()


def tokenizer_sha256(tokenizer) -> str:
    """Hash of what the tokenizer does, not of its files: class, vocabulary, special tokens."""
    vocab = sorted(tokenizer.get_vocab().items())
    special = {name: getattr(tokenizer, name, None) for name in ("bos_token", "eos_token", "unk_token", "pad_token")}
    probe = tokenizer.encode("path-eval tokenizer probe: Hello world.\n  12345 ünïcödé")
    blob = json.dumps([type(tokenizer).__name__, vocab, special, probe], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def model_identity(path: Path, lm, device: str, tokenizer_hash: str) -> dict:
    """Everything about a loaded model that changes its numbers (also the key of its resume cache);
    `tokenizer_hash`: `tokenizer_sha256(lm.tokenizer)`, which the caller has computed already."""
    from path_eval.models.loading import weight_files

    return {
        "model_path": str(path.resolve()),
        "model_type": json.loads((path / "config.json").read_text()).get("model_type", "?"),
        "variant": getattr(lm.model.config, "attention", None),
        "config_sha256": hashlib.sha256((path / "config.json").read_bytes()).hexdigest(),
        "weights_sha256": weights_sha256(weight_files(path)),
        "tokenizer": lm.tokenizer.name_or_path, "tokenizer_sha256": tokenizer_hash,
        "max_length": lm.max_length, "dtype": lm.precision,
        "device": device, "attention_backend": getattr(lm.model, "backend_name", None),
        "decoding": getattr(lm.model, "decoding_path", None),
    }
