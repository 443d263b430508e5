"""The CI regression check: results against a committed baseline, metric by metric.

Baseline file: a results.json (a list of records), or {"tolerances": {...}, "records": [...]};
`--tolerances FILE` replaces the baseline's tolerances with another set for the same records.
Tolerances per metric name: {"abs": x} and/or {"rel": y}; a record may also be matched by
"task/metric" or "model/task/metric". Lookup order: model/task/metric, task/metric, metric, in the
baseline file, then the caller's defaults. Only changes in the worse direction (the metric
registry's; a record's own field for a metric the registry lacks) beyond tolerance are
regressions, unless the tolerance says
"either_direction": true (a suite over fixed checkpoints, such as `ci` over the zoo, where any change
beyond the measured drift means the evaluation or the model changed).

Records are matched by display name (`--model NAME=...`), task, length, bucket and metric. A
different protocol (tokenizer, data, seed, limit, few-shot, max_length, prompt cut, chat template,
system instruction, few-shot turns) makes them incomparable; so does a named difference (dtype,
device class, attention backend, harness or lm-eval version), unless the caller accepts it by name
(`--allow-difference device,attention`): then the tolerances decide.
"""
from __future__ import annotations

import json
import lzma
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from path_eval.errors import PathEvalError
from path_eval.metrics.registry import higher_is_better, impossible_value
from path_eval.results import ResultRecord
from path_eval.results.schema import RunResults
from path_eval.results.store import check_schema_version, parse_json_file, refuse_duplicates

DEFAULT_TOLERANCE = {"abs": 0.0, "rel": 1e-6}
PROTOCOL_FIELDS = ("tokenizer_sha256", "data_fingerprint", "seed", "limit", "num_fewshot", "max_length",
                   "truncate_middle", "data_source", "sample_set", "prompt_parts", "longbench_rule",
                   "chat_template_sha256", "system_instruction", "fewshot_as_multiturn")
# Settings that move the numbers without changing the protocol: a difference is named, and accepted
# only by that name. The device class: cuda:1 and cuda are one.
NAMED_DIFFERENCES: dict[str, Callable] = {
    "dtype": lambda p: p.dtype, "device": lambda p: p.device.split(":")[0],
    "attention": lambda p: p.attention_backend, "harness": lambda p: p.harness_version,
    "lm-eval": lambda p: p.lm_eval_version}


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


TOLERANCE_KINDS = ("abs", "rel")


def read_json(path: Path, what: str, give: str):
    """The parsed file (xz-decompressed where its name ends in .xz), or one error line naming `what`
    it should have been and `give`."""
    if not path.is_file():
        raise PathEvalError(f"no {what} at {path}: give {give}")
    try:
        return parse_json_file(path)
    except lzma.LZMAError as err:
        raise PathEvalError(f"{what} {path} is not an xz archive ({err}): give {give}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PathEvalError(f"{what} {path} is not JSON ({err}): give {give}") from None
    except RecursionError:
        raise PathEvalError(f"{what} {path} nests deeper than Python reads: give {give}") from None


def load_baseline(path: Path) -> tuple[list[ResultRecord], dict]:
    """The baseline's records and tolerances, or one error line (a baseline that cannot be read is
    not a regression: the caller exits 2, not 1)."""
    path = Path(path)
    raw = read_json(path, "baseline file", "a results.json or a {tolerances, records} file")
    shape = f"baseline {path} is not a results list or an object with 'records' (and 'tolerances')"
    if isinstance(raw, list):
        records, tolerances = raw, {}
    elif isinstance(raw, dict) and "records" in raw and not set(raw) - {"records", "tolerances"}:
        records, tolerances = raw["records"], raw.get("tolerances", {})
    else:
        raise PathEvalError(f"{shape}: give a results.json or a {{tolerances, records}} file")
    check_schema_version(records, path)
    try:
        baseline = RunResults.model_validate(records).root
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{shape}: records.{'.'.join(map(str, first['loc']))}: {first['msg']}: give records "
                            "as a results.json holds them") from None
    refuse_duplicates(baseline, path)
    if not baseline:
        raise PathEvalError(f"baseline {path} holds no records: a check against it would compare nothing; give a "
                            "results.json of a finished run")
    check_tolerances(tolerances, baseline, path)
    return baseline, tolerances


def load_tolerances(path: Path, baseline: list[ResultRecord]) -> dict:
    """Tolerances that replace the baseline's own, from {"tolerances": {...}} (plus an optional
    "derivation" saying where the numbers come from), or one error line. One baseline of records then
    answers several questions: the same checkpoints elsewhere (the baseline's tolerances), or
    checkpoints retrained by the same command (results/ci/retrain_tolerances.json)."""
    path = Path(path)
    raw = read_json(path, "tolerance file", "an object with 'tolerances'")
    if not isinstance(raw, dict) or "tolerances" not in raw or set(raw) - {"tolerances", "derivation"}:
        raise PathEvalError(f"tolerance file {path} is not an object with 'tolerances' (and 'derivation'): give "
                            "{\"tolerances\": {metric: {abs, rel}}}")
    check_tolerances(raw["tolerances"], baseline, path)
    return raw["tolerances"]


def check_tolerances(tolerances, baseline: list[ResultRecord], path: Path) -> None:
    """Every tolerance names a baseline metric (or task/metric) and gives abs and/or rel as numbers
    of at least 0: a misspelt key would otherwise be ignored silently."""
    if not isinstance(tolerances, dict):
        raise PathEvalError(f"baseline {path}: tolerances must be an object: give metric -> {{abs, rel}}, e.g. "
                            "{\"acc\": {\"abs\": 0.01}}")
    known = {name for r in baseline for name in tolerance_names(r)}
    for name, tolerance in tolerances.items():
        if name not in known:
            raise PathEvalError(f"baseline {path}: tolerance {name!r} matches no baseline metric: use one of "
                                f"{', '.join(sorted(known))}")
        if not isinstance(tolerance, dict) or not tolerance:
            raise PathEvalError(f"baseline {path}: tolerance {name!r} must be an object: give e.g. "
                                "{\"abs\": 0.01} and/or {\"rel\": 0.02}")
        for kind, value in tolerance.items():
            if kind == "either_direction":
                if not isinstance(value, bool):
                    raise PathEvalError(f"baseline {path}: tolerance {name}.either_direction = {value!r} is not "
                                        "true or false")
                continue
            if kind not in TOLERANCE_KINDS:
                raise PathEvalError(f"baseline {path}: tolerance {name!r} has unknown key {kind!r}: use abs and/or "
                                    "rel (and either_direction)")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise PathEvalError(f"baseline {path}: tolerance {name}.{kind} = {value!r} is not a number of at "
                                    "least 0: give e.g. 0.01")


def tolerance_names(record: ResultRecord) -> tuple[str, str, str]:
    """The tolerance entries that may govern a record, the first present wins: model/task/metric
    (one model's own: a retrained model whose training is noisier than the others'), task/metric,
    metric."""
    return f"{record.model}/{record.task}/{record.metric}", f"{record.task}/{record.metric}", record.metric


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


def allowed_differences(text: str | None) -> set[str]:
    """The names `--allow-difference` accepts (comma-separated), or one error line; an empty name (a
    stray comma) is refused rather than read as accepting nothing."""
    if text is None:
        return set()
    given = [name.strip() for name in text.split(",")]
    if not all(given):
        raise PathEvalError(f"--allow-difference {text!r} holds an empty name: give comma-separated names from "
                            f"{', '.join(NAMED_DIFFERENCES)}")
    names = set(given)
    unknown = sorted(names - set(NAMED_DIFFERENCES))
    if unknown:
        raise PathEvalError(f"--allow-difference {unknown[0]!r} names no difference: choose from "
                            f"{', '.join(NAMED_DIFFERENCES)}")
    return names


def named_differences(baseline: ResultRecord, current: ResultRecord) -> list[tuple[str, str, str]]:
    """(name, baseline's value, current value) of every named difference between two records."""
    return [(name, str(value(baseline.provenance)), str(value(current.provenance)))
            for name, value in NAMED_DIFFERENCES.items() if value(baseline.provenance) != value(current.provenance)]


def check(current: list[ResultRecord], baseline: list[ResultRecord], tolerances: dict,
          defaults: dict | None = None, allow: set[str] = frozenset()) -> tuple[list[Finding], list[str], list[str]]:
    """Findings for every baseline record, the reasons the inputs are incomparable (if any), and the
    named differences accepted by `allow` (one line each). A value that cannot be is one error line."""
    refuse_impossible_values(baseline, "the baseline")
    refuse_impossible_values(current, "the results")
    by_key = {key_of(r): r for r in current}
    findings, problems = [], []
    differences: dict[tuple[str, str, str], list[tuple]] = {}
    for base in baseline:
        now = by_key.get(key_of(base))
        if now is None:
            problems.append(f"missing from the results: {' '.join(map(str, filter(None, key_of(base))))}")
            continue
        reason = incomparable(base, now)
        if reason:
            problems.append(reason)
            continue
        named = named_differences(base, now)
        for difference in named:
            differences.setdefault(difference, []).append(key_of(base))
        if any(name not in allow for name, _, _ in named):
            continue
        tol = next((tolerances[name] for name in tolerance_names(base) if name in tolerances), None) or \
            (defaults or {}).get(base.metric) or DEFAULT_TOLERANCE
        allowed = max(tol.get("abs", 0.0), tol.get("rel", 0.0) * abs(base.value))
        worse = base.value - now.value if higher_is_better(base.metric, base.higher_is_better) else \
            now.value - base.value
        if tol.get("either_direction"):
            worse = abs(worse)
        findings.append(Finding(key_of(base), base.value, now.value, allowed, worse > allowed))
    lines = {difference: f"{difference[0]} differs ({difference[1]} in the baseline, {difference[2]} in the results) "
                         f"in {len(keys)} records, e.g. {' '.join(map(str, filter(None, keys[0])))}"
             for difference, keys in differences.items()}
    problems += [f"{line}: accept it with --allow-difference {difference[0]}"
                 for difference, line in lines.items() if difference[0] not in allow]
    return findings, problems, [line for difference, line in lines.items() if difference[0] in allow]


def refuse_impossible_values(records: list[ResultRecord], source: str) -> None:
    """One line naming the first record of `source` whose value cannot be (NaN, infinite, outside the
    metric's bounds in the metric registry): no tolerance can compare it, and NaN compares false with
    everything, so it would pass as ok."""
    for record in records:
        problem = impossible_value(record.metric, record.value)
        if problem:
            raise PathEvalError(f"{source} hold an impossible value: {' '.join(map(str, filter(None, key_of(record))))}"
                                f" = {record.value} {problem}: give results a run wrote (a run whose model "
                                "produced it is refused), or fix the record")


def not_comparable_line(findings: list[Finding], baseline: list[ResultRecord]) -> str:
    """The first line of a check whose inputs are not comparable (the reasons follow it)."""
    left = len(baseline) - len(findings)
    return (f"not comparable: {left} of {len(baseline)} baseline records cannot be compared with these results, "
            "for the reasons below")


def summary_line(findings: list[Finding], baseline: list[ResultRecord], problems: list[str]) -> str:
    """The last line of a check: what was compared, what regressed, and the verdict with its exit
    code. A baseline record without a finding was left out as incomparable."""
    regressed = sum(f.regressed for f in findings)
    verdict = ("not comparable (exit 2)" if problems else "regressed (exit 1)" if regressed else
               "within tolerance (exit 0)")
    left = len(baseline) - len(findings)
    compared = f"{left} of {len(baseline)} baseline records incomparable" if left else \
        f"all {len(baseline)} baseline records compared"
    return f"{regressed} of {len(findings)} metrics regressed beyond tolerance, {compared}: {verdict}"
