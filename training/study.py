"""A compact copy of a run folder, small enough to commit: the zoo study's per-sample logs hold every
prompt (up to 16K tokens each, hundreds of MB in all), which the reports never read.

The copy keeps plan.json, suite.json, timings.json and the per-position curves, results.json as
results.json.xz (every record repeats the run's provenance: the A5 parts' 580 KB archive to 7 KB;
every reader of a run folder's records opens either), and every per-sample log in one archive,
samples.tar.xz, at its path under the run folder (which every reader of the logs opens): the
models of a run share their samples, so one archive stores each
input and target once (the state-tracking diagnostics score every A5 model on the same words). In
each log it replaces the prompt (`request`) and every long text of the sample (`doc`: the input,
the haystack) by its sha256 and length; the short fields stay
(references, queries, sample length, a token-tagging sample's input and target ids, the response and
its scores), so `report`, `compare`, the paired tests and `rescore` read the copy as they read the
run; a prompt is regenerated from its frozen key in suite.json and plan.json when wanted. The archive
is deterministic (sorted members, no times or owners): the same rows give the same bytes, so a
recompacted run leaves git nothing to commit. Corpus blocks keep their rows (sums per bucket); their
per-position .npy files, kept for resuming, are left out; lm-eval's own layout and the resume cache
are left out.

`--merge` makes one compact copy of several of one suite's runs whose models differ: device calls
that each train and score a few models of one plan leave a run each, and one archive stores the
samples they share once (every MQRAR-N model reads the same inputs) where a copy per call would
store them again.

`summary` reads a (compact) run's per-sample logs, item by item of its plan, into one cell per
model, task and length, for a run stopped before it wrote results.json: a generated task's metric averaged over its samples (and
seeds), its standard error; a corpus's perplexity overall and per position bucket; flip-flop's
error pooled over reads.

    python -m training.study RUN_FOLDER COPY_FOLDER
    python -m training.study --summary COPY_FOLDER --out SUMMARY.json
    python -m training.study --merge COPY_FOLDER COPY_FOLDER ... --out MERGED_FOLDER
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import math
import shutil
import tarfile
from pathlib import Path

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.results.sample_logs import ARCHIVE, archived_logs
from training import run_cli
from benchmarks.markdown import load, percent, seconds, table
from training.train import VARIANTS

KEPT_FILES = ("plan.json", "suite.json", "timings.json")
LONG_TEXT = 256  # characters: longer strings of a sample are replaced by their hash


def digest(text: str) -> dict:
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}


def compact_value(value):
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return digest(value)
    if isinstance(value, dict):
        return {key: compact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [compact_value(item) for item in value]
    return value


def compact_row(row: dict) -> dict:
    """A per-sample log row without its prompt and long texts (see the module's docstring)."""
    compact = {key: value for key, value in row.items() if key != "request"}
    if "request" in row:
        compact["request"] = digest(json.dumps(row["request"], ensure_ascii=False))
    for key in ("doc", "input"):
        if key in row:
            compact[key] = compact_value(row[key])
    return compact


def compact_run(run: Path, copy: Path) -> int:
    """Write the compact copy of `run` to `copy` (a new folder; of an unfinished run, whatever
    per-sample logs it has); returns the rows copied."""
    run, copy = Path(run), Path(copy)
    if not (run / "plan.json").is_file():
        raise PathEvalError(f"{run} holds no plan.json: give a run folder")
    if copy.exists():
        raise PathEvalError(f"{copy} exists: give a new folder for the copy")
    copy.mkdir(parents=True)
    for name in KEPT_FILES:
        if (run / name).is_file():
            shutil.copyfile(run / name, copy / name)
    if run_folder.results_file(run).is_file():
        (copy / run_folder.RESULTS_ARCHIVE).write_bytes(lzma.compress(run_folder.results_file(run).read_bytes(),
                                                                      preset=9 | lzma.PRESET_EXTREME))
    if (run / "curves").is_dir():
        shutil.copytree(run / "curves", copy / "curves")
    logs, rows = [], 0
    for log in sorted((run / "samples").glob("*/*.jsonl")):
        with open(log, encoding="utf-8") as source:
            lines = [json.dumps(compact_row(json.loads(line)), ensure_ascii=False) + "\n" for line in source]
        logs.append((log.relative_to(run).as_posix(), "".join(lines).encode("utf-8")))
        rows += len(lines)
    write_log_archive(copy / ARCHIVE, logs)
    return rows


def write_log_archive(archive: Path, logs: list[tuple[str, bytes]]) -> None:
    """The logs (name under the run folder, bytes) as one deterministic tar.xz: sorted, no times or
    owners, xz's largest dictionary (so a log repeated across models is stored once)."""
    with tarfile.open(archive, "w:xz", preset=9 | lzma.PRESET_EXTREME, format=tarfile.GNU_FORMAT) as tar:
        for name, data in sorted(logs):
            entry = tarfile.TarInfo(name)
            entry.size, entry.mode = len(data), 0o644
            tar.addfile(entry, io.BytesIO(data))


# What a run's plan holds that is not its models or items: the parts of one merged copy agree on it.
PLAN_SETTINGS = ("suite", "limit", "seed", "data_dir", "chat", "allow_code_execution")
PARTS = "parts.json"  # a merged copy: each part's folder name, models and phase times


def merge_copies(copies: list[Path], merged: Path) -> int:
    """One compact copy (a new folder) holding the models of several compact copies of one suite's
    runs, each model in one of them: device calls that each trained and scored a few models of one
    plan. In one archive the samples every part shares (the MQRAR-N inputs are the same for every
    model of the suite) are stored once. The plan's models and each item's models are the union, its
    items skipped everywhere stay skipped; the records are the parts' in order; each part's
    timings.json (its own processes, not one run's) goes to parts.json. One copy alone gives the first
    part of a merged copy that later parts merge into. Returns the rows merged."""
    copies, merged = [Path(copy) for copy in copies], Path(merged)
    if not copies:
        raise PathEvalError("--merge needs the compact copies to merge: give every part")
    if merged.exists():
        raise PathEvalError(f"{merged} exists: give a new folder for the merged copy")
    for copy in copies:
        if not all((copy / name).is_file() for name in ("plan.json", "suite.json", ARCHIVE, run_folder.RESULTS_ARCHIVE)):
            raise PathEvalError(f"{copy} is not a compact copy of a finished run (plan.json, suite.json, {ARCHIVE}, "
                                f"{run_folder.RESULTS_ARCHIVE}): make one with "
                                "`python -m training.study RUN_FOLDER COPY_FOLDER`")
    plans = [json.loads((copy / "plan.json").read_text()) for copy in copies]
    for copy, plan in zip(copies[1:], plans[1:]):
        if (copy / "suite.json").read_bytes() != (copies[0] / "suite.json").read_bytes() or \
                any(plan[key] != plans[0][key] for key in PLAN_SETTINGS):
            raise PathEvalError(f"{copy} and {copies[0]} are runs of different suites or settings: merge the "
                                "parts of one suite run with one seed, limit and data")
    owner: dict[str, Path] = {}
    for copy, plan in zip(copies, plans):
        for model in plan["models"]:
            if model["name"] in owner:
                raise PathEvalError(f"model {model['name']} is in both {owner[model['name']]} and {copy}: "
                                    "a model belongs to one part")
            owner[model["name"]] = copy
    items: dict[tuple, dict] = {}
    for plan in plans:
        for item in plan["items"]:
            kept = items.setdefault((item["task"], item["length"]), item | {"models": []})
            kept["models"] += item["models"]
    plan = plans[0] | {"models": [model for plan in plans for model in plan["models"]],
                       "items": list(items.values())}
    planned = {task for task, _ in items}
    plan["skipped"] = [entry for entry in {entry["task"]: entry for p in plans for entry in p["skipped"]}.values()
                       if entry["task"] not in planned]
    logs: dict[str, bytes] = {}
    for copy in copies:
        stat = (copy / ARCHIVE).stat()
        logs |= archived_logs(str(copy / ARCHIVE), stat.st_size, stat.st_mtime_ns)  # names hold their one part's model
    records = [record for copy in copies for record in load(copy / run_folder.RESULTS_ARCHIVE)]
    merged.mkdir(parents=True)
    (merged / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    shutil.copyfile(copies[0] / "suite.json", merged / "suite.json")
    (merged / run_folder.RESULTS_ARCHIVE).write_bytes(lzma.compress(json.dumps(records, indent=1).encode(),
                                                                    preset=9 | lzma.PRESET_EXTREME))
    (merged / PARTS).write_text(json.dumps([part for copy, p in zip(copies, plans) for part in parts_of(copy, p)],
                                           indent=1) + "\n")
    write_log_archive(merged / ARCHIVE, list(logs.items()))
    return sum(data.count(b"\n") for data in logs.values())


def parts_of(copy: Path, plan: dict) -> list[dict]:
    """A copy's parts: those it was merged from (its parts.json), or itself, with its phase times."""
    if (copy / PARTS).is_file():
        return load(copy / PARTS)
    timings = copy / "timings.json"
    return [{"part": copy.name, "models": [model["name"] for model in plan["models"]],
             "timings": load(timings) if timings.is_file() else None}]


def summary(run: Path) -> list[dict]:
    """One cell per model, task and length of the run's plan whose per-sample logs are all there (see
    the module's docstring)."""
    from path_eval.plan import PlannedItem
    from path_eval.results.sample_logs import log_names, read_sample_log

    items = [PlannedItem.model_validate(item) for item in json.loads((Path(run) / "plan.json").read_text())["items"]]
    cells = []
    for item in items:
        for model in item.models:
            try:
                logs = [read_sample_log(run, model, name) for name in log_names(item)]
            except PathEvalError:  # a model the stopped run never reached
                continue
            cell = {"model": model, "task": item.task, "length": item.length}
            rows = [row for log in logs for row in log]
            if item.kind == "flipflop":
                wrong, reads = sum(r["wrong"] for r in rows), sum(r["reads"] for r in rows)
                cells.append(cell | {"metric": "flipflop_error", "value": wrong / reads, "n": len(rows),
                                     "reads": reads})
            elif item.kind == "corpus":
                buckets = [sum(r["nll_sum"][k] for r in rows) / sum(r["count"][k] for r in rows)
                           for k in range(len(rows[0]["count"]))]
                total = sum(sum(r["nll_sum"]) for r in rows) / sum(sum(r["count"]) for r in rows)
                cells.append(cell | {"metric": "perplexity", "value": math.exp(total), "n": len(rows),
                                     "by_position": [math.exp(b) for b in buckets]})
            else:
                metric = next(iter(rows[0]["scores"]))
                scores = [row["scores"][metric] for row in rows]
                mean = sum(scores) / len(scores)
                variance = sum((x - mean) ** 2 for x in scores) / max(1, len(scores) - 1)
                cells.append(cell | {"metric": metric, "value": mean, "n": len(scores), "seeds": len(logs),
                                     "stderr": math.sqrt(variance / len(scores))})
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="a run folder (of a finished run, or what a stopped one left)")
    parser.add_argument("copy", nargs="?", help="a new folder for the compact copy")
    parser.add_argument("--merge", nargs="+", metavar="COPY", help="compact copies of one suite's runs, each with "
                        "models of its own, to merge into one (the new folder --out)")
    parser.add_argument("--summary", help="a (compact) run folder to summarise from its per-sample logs")
    parser.add_argument("--out", help="--summary: the JSON file to write; --merge: the new folder")
    args = parser.parse_args()
    if args.merge:
        if not args.out:
            parser.error("--merge needs --out, the new folder")
        print(f"{merge_copies([Path(copy) for copy in args.merge], Path(args.out))} per-sample rows -> {args.out}")
        return
    if args.summary:
        if not args.out:
            parser.error("--summary needs --out")
        Path(args.out).write_text(json.dumps({"run": args.summary, "cells": summary(Path(args.summary))},
                                             indent=1) + "\n")
        return
    if not (args.run and args.copy):
        parser.error("give RUN_FOLDER and COPY_FOLDER (or --summary)")
    print(f"{compact_run(Path(args.run), Path(args.copy))} per-sample rows -> {args.copy}")


# ---------------------------------------------------------------- docs/zoo.md

# results/state_tracking/: the suite's parts, one run each (A5: a device call per seed, depths 1-2 and 3-4)
STATE_TRACKING_RUNS = ("a5_s0_L12", "a5_s0_L34", "a5_s1_L12", "a5_s1_L34", "a5_s2_L12", "a5_s2_L34", "mqrar_4000",
                       "flipflop")


def render_state_tracking_report(results: Path) -> str:
    """`report --layout state_tracking` over the committed compact copies of the suite's parts."""
    from path_eval.api import load_results

    folders = [results / "state_tracking" / part for part in STATE_TRACKING_RUNS]
    command = "eval.py report " + " ".join(f"results/state_tracking/{part}" for part in STATE_TRACKING_RUNS)
    return "\n\n".join([f"`{command} --layout state_tracking --format markdown`:",
                         load_results(*folders).report("state_tracking", "markdown").strip()])


def study_parts(results: Path) -> dict[str, Path]:
    """The committed study's parts (results/zoo/study/index.json): part name -> compact copy."""
    return {part: results.parent / folder
            for part, folder in load(results / "zoo" / "study" / "index.json")["gpu"]["parts"].items()}


def render_study(results: Path) -> str:
    """The variant study committed under results/zoo/study/ (a compact copy per part of one
    gpu_study.sh call, every model at 1x-16x): the variants view against RoPE over all its parts,
    then the paper's directions tested on it."""
    from path_eval.api import load_results

    run = load(results / "zoo" / "study" / "index.json")["gpu"]
    parts = study_parts(results)
    return "\n\n".join([
        f"On {run['machine']}, {run['samples']} samples per task and length, from `{run['script']}` (each "
        f"part: `{run['command']}`), `report --layout variants --baseline rope` over its "
        f"{len(parts)} parts:",
        load_results(*parts.values()).report("variants", "markdown", baseline="rope").strip(),
        "The paper's directions beside these numbers:",
        directions_table(results)])


def render_study_time(results: Path) -> str:
    """Where the committed study's time went, part by part (each part one process): its phases from
    timings.json, and each model's own calls from its records' provenance (tokens through the model,
    prompts and generated ones, over the seconds of its calls), and whose model class ran them."""
    from path_eval.results import load_records

    rows = []
    for part, folder in study_parts(results).items():
        phases = load(folder / "timings.json")["processes"][0]
        models: dict[str, dict] = {}
        for record in load_records(folder):
            models.setdefault(record.model, record.provenance.model_dump())
        for i, (model, info) in enumerate(models.items()):
            model_s = info["tokens"] / info["tokens_per_second"] if info["tokens_per_second"] else None
            path = "transformers'" if info["attention_backend"] is None else f"the harness's ({info['attention_backend']})"
            rows.append([part if i == 0 else "", seconds(phases["samples"]) if i == 0 else "",
                         seconds(phases["requests"]) if i == 0 else "", model, f"{info['tokens'] / 1e6:.1f}M",
                         seconds(model_s), f"{info['tokens_per_second'] / 1e3:,.0f}K" if model_s else "-", path])
    return "\n\n".join([
        "Each part's phases (its timings.json; the parts ran at once, so they share the GPU and CPU) and each "
        "model's calls (tokens: prompts and generated tokens through the model; model s: those calls' seconds):",
        table(["part", "samples s", "requests s", "model", "tokens", "model s", "tokens/s", "model class"], rows)])


def directions_table(results: Path) -> str:
    """The paper's directions (Table 3, Figure 3, flip-flop) beside the study's numbers, each with the
    paired test that decides it: reproduced where the zoo moves the paper's way and the test gives
    p < 0.05, else not."""
    from path_eval.reports.paired import RunSamples, delta_test
    from path_eval.results import load_records

    records, samples = {}, {}
    for folder in study_parts(results).values():
        run_samples = RunSamples(folder)
        for r in load_records(folder):
            if r.bucket is None:
                records[r.model, r.task, r.length] = r
                samples[r.model] = run_samples

    def test(first: tuple, second: tuple):
        a, b = records[first], records[second]
        return delta_test(a, samples[a.model].scores(a), b, samples[b.model].scores(b))

    def pct(key: tuple) -> str:
        return f"{100 * records[key].value:.1f}"

    rows = []
    # RoPE collapses past its training length (RULER, paper 35.7 -> 1.3 -> 0.0 at 1x, 2x, 4x).
    drop = test(("rope", "niah_single_1", 1024), ("rope", "niah_single_1", 2048))
    rows.append(["RoPE fails past its training length (RULER)", "35.7 / 1.3 / 0.0 at 1x / 2x / 4x",
                 "NIAH single_1: " + " / ".join(pct(("rope", "niah_single_1", n)) for n in (1024, 2048, 4096)),
                 drop.cell(), verdict(records["rope", "niah_single_1", 2048].value
                                      < records["rope", "niah_single_1", 1024].value and drop.significant)])
    others = [test(("rope", "niah_single_1", 2048), (v, "niah_single_1", 2048)) for v in VARIANTS[1:]]
    rows.append(["... while the other variants keep the needle at 2x", "RULER at 2x: FoX 29.5, PaTH 34.8, PaTH-FoX 34.0",
                 "NIAH single_1 at 2x: " + ", ".join(f"{v} {pct((v, 'niah_single_1', 2048))}" for v in VARIANTS[1:]),
                 "; ".join(t.cell() for t in others),
                 verdict(all(t.significant and records[v, "niah_single_1", 2048].value
                             > records["rope", "niah_single_1", 2048].value
                             for t, v in zip(others, VARIANTS[1:])))])
    # PhoneBook: PaTH-FoX far above PaTH past the training length (paper 93.8 vs 20.8 at 1x, 66.6 vs 0.0 at 2x).
    for n in (2048, 4096):
        t = test(("path", "phonebook", n), ("path_fox", "phonebook", n))
        rows.append([f"PaTH-FoX above PaTH on PhoneBook at {n // 1024}x", "93.8 vs 20.8 at 1x; 66.6 vs 0.0 at 2x",
                     f"{pct(('path_fox', 'phonebook', n))} vs {pct(('path', 'phonebook', n))}", t.cell(),
                     verdict(records["path_fox", "phonebook", n].value > records["path", "phonebook", n].value
                             and t.significant)])
    # Perplexity: RoPE climbs past its training length, FoX and PaTH-FoX stay flat (Figure 3).
    longest = max(n for (model, task, n) in records if model == "rope" and task == "heldout")
    climb = {(v, n): records[v, "heldout", n].value / records[v, "heldout", 1024].value
             for v in VARIANTS for n in (4096, longest)}
    rows.append(["RoPE's perplexity climbs past its training length; FoX and PaTH-FoX stay flat (Figure 3)",
                 "RoPE fails past 4K; FoX, PaTH-FoX flat to 64K",
                 f"held-out perplexity at 4x / {longest // 1024}x over 1x: "
                 + ", ".join(f"{v} {climb[v, 4096]:.2f}x / {climb[v, longest]:.2f}x" for v in VARIANTS), "-",
                 verdict(climb["rope", 4096] > 1.5 and all(climb[v, n] < 1.1 for v in ("fox", "path_fox")
                                                           for n in (4096, longest)))])
    # Flip-flop: PaTH below RoPE in and out of distribution.
    for split, paper in (("in", "0% vs 6.9%"), ("sparse", "0.0001% vs 40.3%")):
        first, second = ("flipflop_rope", f"flipflop_{split}", 512), ("flipflop_path", f"flipflop_{split}", 512)
        t = test(first, second)
        rows.append([f"PaTH's flip-flop error below RoPE's ({split}, at 512)", paper,
                     f"{percent(records[second].value)} vs {percent(records[first].value)}", t.cell(),
                     verdict(records[second].value < records[first].value and t.significant)])
    return table(["the paper's direction", "paper", "zoo", "paired test", "here"], rows)


def verdict(holds: bool) -> str:
    return "reproduced" if holds else "**not reproduced**"


if __name__ == "__main__":
    run_cli(main)
