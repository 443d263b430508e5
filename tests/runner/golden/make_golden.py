"""Golden records: what `eval.py run` gives on the committed fixtures with tiny seeded models, for
every suite, kept to the fields that must not change when the pipeline is reworked.

    python -m tests.runner.golden.make_golden            # run and compare with the stored records
    python -m tests.runner.golden.make_golden --write    # run and (re)write tests/runner/golden/*.json

tests/runner/test_golden_records.py runs the same commands (`--rows-out`, in a process of its own) and
compares with `compare`. Rewrite the files only for a change that is meant to change results, and say why in
the commit."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from path_eval.models.random_checkpoint import random_model
from tests.helpers import cache_with_task_index, fixture_data, write_babilong, write_longbench_e

GOLDEN_DIR = Path(__file__).resolve().parent

# name -> (variant, seed) of random_model(variant, "tiny", seed)
MODELS = {"path-tiny": ("path", 0), "rope-tiny": ("rope", 1)}
BOTH, PATH_ONLY = tuple(MODELS), ("path-tiny",)
# Per suite: the models, and the command-line arguments of each run (besides --model, --data-dir, --out,
# --quiet). Generation dominates the time (about 0.05 s a token on 2 cores), so the generated suites
# run one model on few samples, and RULER one task of each kind: essay NIAH, variable tracking and
# frequent words at 2K (the essay haystack's least); ten QA documents take more than 2K, so qa_1 and
# qa_2 (and their mean, `qa`) run at 4K.
RUNS: dict[str, tuple[tuple[str, ...], list[list[str]]]] = {
    "table2": (BOTH, [["--limit", "3", "--bootstrap-iters", "100"]]),
    "extrapolation": (BOTH, [["--lengths", "512,1024", "--tasks", "books_standin", "--limit", "2"]]),
    "ruler": (PATH_ONLY, [["--lengths", "2k", "--limit", "1", "--tasks", "niah_single_2,vt,fwe"],
                          ["--lengths", "4k", "--limit", "1", "--tasks", "qa_1,qa_2"]]),
    "phonebook": (PATH_ONLY, [["--lengths", "1k,2k", "--limit", "1"]]),
    "longbench_e": (PATH_ONLY, [["--tasks", "2wikimqa,trec"]]),
    "babilong": (PATH_ONLY, [["--lengths", "0k,4k", "--limit", "1"]]),
}
RECORD_FIELDS = ("suite", "model", "task", "length", "bucket", "length_bucket", "metric", "value", "stderr", "n",
                 "higher_is_better", "seeds", "seed_std")
# Inputs of the run. data_fingerprint hashes each file's bytes with its last three path parts
# (path_eval.data.fingerprint), so it is the same in every checkout and temporary folder.
PROVENANCE_FIELDS = ("seed", "limit", "num_fewshot", "max_length", "dtype", "truncate_middle", "data_fingerprint")
# Floats made from float32 log-likelihoods (perplexities, stderrs, seed spreads) may move in their last
# bits when a kernel sums in another order (another thread count or vector width; float32's epsilon is
# 1.2e-7); scores counted from samples may not move at all.
FLOAT_REL_TOLERANCE = 1e-6
KEY_FIELDS = ("model", "task", "length", "bucket", "length_bucket", "metric")


def golden_file(suite: str) -> Path:
    return GOLDEN_DIR / f"{suite}.json"


def write_models(folder: Path) -> Path:
    for name, (variant, seed) in MODELS.items():
        random_model(variant, "tiny", seed).save_pretrained(folder / name)
    return folder


def build_data_dir(folder: Path) -> Path:
    """The committed fixtures plus the LongBench-E and BABILong rows the tests write."""
    fixture_data(folder)
    write_longbench_e(folder)
    write_babilong(folder, lengths=("0k", "4k"))
    return folder


def golden_fields(record) -> dict:
    row = {field: getattr(record, field) for field in RECORD_FIELDS}
    row["provenance"] = {field: getattr(record.provenance, field) for field in PROVENANCE_FIELDS}
    return row


def run_suite(suite: str, models: Path, data_dir: Path, out: Path) -> list[dict]:
    """`eval.py run` of the suite's golden commands (in this process), as golden rows."""
    from path_eval.cli import main
    from path_eval.results import load_records

    names, runs = RUNS[suite]
    rows = []
    for number, args in enumerate(runs):
        argv = ["run", "--suite", suite, *[a for name in names for a in ("--model", str(models / name))], "--data-dir",
                str(data_dir), "--out", str(out / str(number)), "--quiet", *args]
        code = main(argv)
        if code != 0:
            raise RuntimeError(f"eval.py {' '.join(argv)} exited with {code}")
        rows += [golden_fields(r) for r in load_records(out / str(number))]
    return rows


def _key(row: dict) -> str:
    """model task [length] [bucket] [length bucket] metric, e.g. "path-tiny books_standin 512 [0, 510] perplexity"."""
    return " ".join(str(row[field]) for field in KEY_FIELDS if row[field] is not None)


def _close(found, expected) -> bool:
    if found is None or expected is None:
        return found is expected
    return math.isclose(found, expected, rel_tol=FLOAT_REL_TOLERANCE, abs_tol=0.0)


def compare(found: list[dict], expected: list[dict]) -> list[str]:
    """One line per difference: records missing or new, fields unequal; floats that are scores
    counted from samples (higher is better) exactly, the others within FLOAT_REL_TOLERANCE."""
    problems = []
    if len(found) != len(expected):
        problems.append(f"{len(found)} records, golden {len(expected)}")
    found_by_key, expected_by_key = {_key(r): r for r in found}, {_key(r): r for r in expected}
    problems += [f"missing record {key}" for key in expected_by_key.keys() - found_by_key.keys()]
    problems += [f"new record {key}" for key in found_by_key.keys() - expected_by_key.keys()]
    for key in expected_by_key.keys() & found_by_key.keys():
        got, want = found_by_key[key], expected_by_key[key]
        if got.keys() != want.keys() or got["provenance"].keys() != want["provenance"].keys():
            problems.append(f"{key}: fields {sorted(got)} / {sorted(got['provenance'])}, golden {sorted(want)} / "
                            f"{sorted(want['provenance'])}")
            continue
        for field in got.keys() - {"value", "stderr", "seed_std"}:
            if got[field] != want[field]:
                problems.append(f"{key}: {field} {got[field]!r}, golden {want[field]!r}")
        exact_value = want["higher_is_better"]
        if not (got["value"] == want["value"] if exact_value else _close(got["value"], want["value"])):
            problems.append(f"{key}: value {got['value']!r}, golden {want['value']!r}"
                            f"{'' if exact_value else f' (relative tolerance {FLOAT_REL_TOLERANCE})'}")
        for field in ("stderr", "seed_std"):
            if not _close(got[field], want[field]):
                problems.append(f"{key}: {field} {got[field]!r}, golden {want[field]!r} "
                                f"(relative tolerance {FLOAT_REL_TOLERANCE})")
    return sorted(problems)


def read_golden(suite: str) -> list[dict]:
    return json.loads(golden_file(suite).read_text(encoding="utf-8"))


def write_golden(suite: str, rows: list[dict]) -> Path:
    file = golden_file(suite)
    file.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return file


def run_all(suites: list[str]) -> dict[str, list[dict]]:
    """Each suite's golden rows from fresh models, data and frozen samples, with its time."""
    import tempfile

    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # One thread: the same summation order on every machine, and on a busy 2-core CPU generation runs
    # several times faster than with two threads (no contention for the cores). The goldens,
    # made with two threads, are equal to the last bit with one.
    torch.set_num_threads(1)
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Frozen samples made afresh; lm-eval's task index, which a fresh cache would have this process
        # build (some 14,000 YAMLs, 10 s of a CPU), taken from the cache it started with.
        os.environ["PATH_EVAL_CACHE"] = str(cache_with_task_index(Path(tmp) / "cache"))
        models, data_dir = write_models(Path(tmp) / "models"), build_data_dir(Path(tmp) / "data")
        for suite in suites:
            started = time.monotonic()
            found[suite] = run_suite(suite, models, data_dir, Path(tmp) / "runs" / suite)
            print(f"{suite}: {len(found[suite])} records in {time.monotonic() - started:.1f} s", flush=True)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(RUNS), help="comma-separated suites (default: all)")
    parser.add_argument("--write", action="store_true", help="write the golden files instead of comparing")
    parser.add_argument("--rows-out", type=Path, help="write the rows found, {suite: rows}, to this file instead of "
                                                      "comparing")
    args = parser.parse_args(argv)
    found = run_all(args.suites.split(","))
    if args.rows_out:
        args.rows_out.write_text(json.dumps(found), encoding="utf-8")
        return 0
    if args.write:
        for suite, rows in found.items():
            print(f"{suite} -> {write_golden(suite, rows)}")
        return 0
    failed = False
    for suite, rows in found.items():
        problems = compare(rows, read_golden(suite))
        failed |= bool(problems)
        print(f"{suite}: " + ("\n  ".join(["differs from its golden records:", *problems]) if problems else "same"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
