"""Per-sample logs beside results.json: request, target, prediction or log-likelihoods, and the
per-sample scores, one JSON line per sample, so results can be rescored later."""
from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from path_eval.atomic_files import write_jsonl_atomic

LM_EVAL_FIELDS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                  "doc_hash", "prompt_hash", "target_hash"}


# A file name holds at most 255 bytes; names are cut well below, to leave room for what is added
# around them (TASK_LENGTH_sSEED.jsonl, lm-eval's samples_NAME_DATE.jsonl, a staging prefix).
MAX_NAME_BYTES = 160

# Names Windows keeps for devices, whatever follows their first dot (`nul.txt` is NUL): a run folder
# copied there could not hold a file or folder of that name.
WINDOWS_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
                             *(f"{port}{n}" for port in ("COM", "LPT") for n in "0123456789\u00b9\u00b2\u00b3")})
# Characters Windows refuses in a file name (`:` opens an alternate data stream there).
WINDOWS_FORBIDDEN = '<>:"|?*'


def windows_device(name: str) -> bool:
    return name.split(".")[0].rstrip(" ").upper() in WINDOWS_DEVICES


def slug(text: str) -> str:
    """The file or folder name of a name that may hold anything (a model's display name is a hub id
    `org/name`, or a whole path when two folders share a name): letters, digits, `_`, `.` and `-`,
    never empty, holding `..`, starting with a dot (hidden) or a dash, nor a Windows device name
    (`nul` becomes `nul_`), a long name cut and given a hash of the whole. Two names can share a
    slug: the plan refuses a run where they would (`path_eval.plan.names`)."""
    name = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.-]+", "_", text)).strip("_").lstrip("._-") or "model"
    if windows_device(name):
        stem, dot, rest = name.partition(".")
        name = f"{stem}_{dot}{rest}"
    if len(name) > MAX_NAME_BYTES:
        name = f"{name[:MAX_NAME_BYTES - 17]}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    return name


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a file name as it is, or None. Names the user chooses that become file
    names whole (a suite's, a task's, a display name's) must not hold a path separator, `..`, a NUL,
    a control or line-break character, start with a dot (hidden, or `.`/`..` themselves) or a dash
    (read as an option by the commands a user runs on the file), be empty, nor run past what a
    file name can hold; nor be what Windows refuses, since run folders are copied between systems."""
    if not name:
        return "is empty"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if ".." in name:
        return "holds '..'"
    if name.startswith("."):
        return "starts with '.'"
    if name.startswith("-"):
        return "starts with '-'"
    forbidden = next((c for c in name if c in WINDOWS_FORBIDDEN), None)
    if forbidden is not None:
        return f"holds {forbidden!r}, which Windows refuses in a file name"
    if windows_device(name):
        return "is a name Windows keeps for a device"
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X}"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def sample_record(sample: dict) -> dict:
    """lm-eval's sample dict -> ours. Requests are (context, continuation) pairs, a document, or
    (context, generation options); responses are (log-likelihood, is_greedy) pairs, a summed
    log-likelihood, or generated text."""
    requests = [list(a) if isinstance(a, (list, tuple)) else a for a in sample.get("arguments", [])]
    return {
        "doc_id": sample.get("doc_id"),
        "request": [[str(x) if not isinstance(x, (str, int, float, dict)) else x for x in r] for r in requests],
        "target": sample.get("target"),
        "response": sample.get("filtered_resps"),
        "scores": {k: v for k, v in sample.items() if k not in LM_EVAL_FIELDS},
        "doc": sample.get("doc"),
    }


def in_document_order(samples: list[dict]) -> list[dict]:
    """lm-eval's sample dicts by doc_id (a data-parallel run gathers them rank by rank); samples
    without one (read back from a log, which is in this order) keep theirs."""
    return sorted(samples, key=lambda s: s.get("doc_id", 0))


def write_samples(samples: list[dict], target: Path) -> int:
    return write_jsonl_atomic((sample_record(s) for s in in_document_order(samples)), target)
