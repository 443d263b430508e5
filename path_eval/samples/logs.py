"""Per-sample logs beside results.json: request, target, prediction or log-likelihoods, and the
per-sample scores, one JSON line per sample, so results can be rescored later."""
from __future__ import annotations

import re
from pathlib import Path

from path_eval.atomic_files import write_jsonl_atomic

LM_EVAL_FIELDS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                  "doc_hash", "prompt_hash", "target_hash"}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "model"


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
