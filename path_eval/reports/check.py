"""The CI regression check: results against a committed baseline, metric by metric.

Baseline file: a results.json (a list of records), or {"tolerances": {...}, "records": [...]}.
Tolerances per metric name: {"abs": x} and/or {"rel": y}; a record may also be matched by
"task/metric". Lookup order: task/metric, then metric, in the baseline file, then the caller's
defaults. Only changes in the worse direction (the metric registry's; a record's own field for a
metric the registry lacks) beyond tolerance are regressions, unless the tolerance says
"either_direction": true (a suite over fixed checkpoints, such as `ci` over the zoo, where any change
beyond the measured drift means the evaluation or the model changed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.metrics.registry import higher_is_better
from path_eval.results import ResultRecord
from path_eval.results.schema import RunResults

DEFAULT_TOLERANCE = {"abs": 0.0, "rel": 1e-6}
PROTOCOL_FIELDS = ("tokenizer_sha256", "data_fingerprint", "seed", "limit", "num_fewshot", "max_length",
                   "truncate_middle")


@dataclass
class Finding:
    key: tuple
    baseline: float
    value: float
    allowed: float
    regressed: bool

    def line(self) -> str:
        model, task, length, bucket, metric = self.key
        where = f"{model} {task}{'' if length is None else '@' + str(length)}{' [' + bucket + ']' if bucket else ''} {metric}"
        verdict = "REGRESSED" if self.regressed else "ok"
        return f"{verdict:9s} {where}: {self.value:.6g} vs baseline {self.baseline:.6g} " \
               f"(change {self.value - self.baseline:+.4g}, allowed {self.allowed:.4g})"


def load_baseline(path: Path) -> tuple[list[ResultRecord], dict]:
    path = Path(path)
    if not path.is_file():
        raise PathEvalError(f"no baseline file at {path}")
    raw = json.loads(path.read_text())
    records, tolerances = (raw, {}) if isinstance(raw, list) else (raw.get("records"), raw.get("tolerances", {}))
    if records is None:
        raise PathEvalError(f"{path}: a baseline is a results list or an object with 'records' (and 'tolerances')")
    return RunResults.model_validate(records).root, tolerances


def key_of(record: ResultRecord) -> tuple:
    bucket = f"{record.bucket[0]}-{record.bucket[1]}" if record.bucket else record.length_bucket
    return record.model, record.task, record.length, bucket, record.metric


def incomparable(baseline: ResultRecord, current: ResultRecord) -> str | None:
    """Why two records must not be compared, or None."""
    for field in PROTOCOL_FIELDS:
        a, b = getattr(baseline.provenance, field), getattr(current.provenance, field)
        if a != b:
            return f"{' '.join(map(str, filter(None, key_of(current))))}: {field} differs ({a} vs {b})"
    if baseline.suite != current.suite:
        return f"suite differs ({baseline.suite} vs {current.suite})"
    return None


def check(current: list[ResultRecord], baseline: list[ResultRecord], tolerances: dict,
          defaults: dict | None = None) -> tuple[list[Finding], list[str]]:
    """Findings for every baseline record, and the reasons the inputs are incomparable (if any)."""
    by_key = {key_of(r): r for r in current}
    findings, problems = [], []
    for base in baseline:
        now = by_key.get(key_of(base))
        if now is None:
            problems.append(f"missing from the results: {' '.join(map(str, filter(None, key_of(base))))}")
            continue
        reason = incomparable(base, now)
        if reason:
            problems.append(reason)
            continue
        tol = tolerances.get(f"{base.task}/{base.metric}") or tolerances.get(base.metric) or \
            (defaults or {}).get(base.metric) or DEFAULT_TOLERANCE
        allowed = max(tol.get("abs", 0.0), tol.get("rel", 0.0) * abs(base.value))
        worse = base.value - now.value if higher_is_better(base.metric, base.higher_is_better) else \
            now.value - base.value
        if tol.get("either_direction"):
            worse = abs(worse)
        findings.append(Finding(key_of(base), base.value, now.value, allowed, worse > allowed))
    return findings, problems
