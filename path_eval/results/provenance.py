"""Hashes and versions recorded with every result."""
from __future__ import annotations

import hashlib
import json
import platform
import socket
import subprocess
from pathlib import Path

from path_eval.data import file_sha256
from path_eval.locations import cache_dir
from path_eval.results.store import write_json_atomic

REPO = Path(__file__).resolve().parents[2]


def git_revision() -> str | None:
    """HEAD of the harness checkout, with '+dirty' when it has uncommitted changes; None when the
    package is not a checkout of its own (an installed wheel, even one inside some other repository).
    Read-only (`--no-optional-locks`): a `git status` that refreshes the index takes
    `.git/index.lock`, and a git command run meanwhile in the same checkout fails on it."""
    git = ["git", "--no-optional-locks", "-C", str(REPO)]
    try:
        head = subprocess.run([*git, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode:
            return None
        toplevel, revision = head.stdout.splitlines()
        if Path(toplevel).resolve() != REPO:
            return None
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return revision + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def weights_sha256(files: list[Path]) -> str:
    """sha256 over the weight files' hashes; each file's hash is cached by (path, size, mtime)."""
    memo_file = cache_dir() / "weight-hashes.json"
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    digest = hashlib.sha256()
    changed = False
    for file in files:
        stat = file.stat()
        key = f"{file.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        if key not in memo:
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


def versions() -> dict[str, str]:
    import lm_eval
    import torch
    import transformers

    from path_eval import __version__

    return {"harness_version": __version__, "lm_eval_version": getattr(lm_eval, "__version__", "?"),
            "torch_version": torch.__version__, "transformers_version": transformers.__version__,
            "python_version": platform.python_version(), "hostname": socket.gethostname()}


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


def run_provenance(identity: dict, seed: int, limit: int | None, batch_size: int, started: str,
                   counters: list[dict], environment: dict) -> dict:
    """A model's provenance fields common to all its records: identity, run settings, the work its
    processes did over every segment of a resumed run (`counters`: one dict per process) and the
    environment. The wall time is the slowest process's."""
    return identity | {
        "seed": seed, "limit": limit, "batch_size": batch_size, "started_at": started,
        "wall_time_s": round(max(c["wall"] for c in counters), 3), "tokens": sum(c["tokens"] for c in counters),
        # processes run side by side: the run's rate is the sum of theirs
        "tokens_per_second": round(sum(c["tokens"] / c["seconds"] for c in counters if c["seconds"]), 1) or None,
        "truncated_requests": sum(c["truncated"] for c in counters),
        "requests_computed": sum(c["requests"] for c in counters), "processes": len(counters),
    } | environment


def environment() -> dict:
    """Versions and the harness revision, recorded once per run."""
    return versions() | {"git_revision": git_revision()}
