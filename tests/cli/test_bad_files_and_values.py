"""Bad values and broken files, each class with several fresh members: suite values and arguments
that used to be accepted (a number where a list belongs, sizes of 0, a length given twice, seeds
numpy cannot take), results files that used to read as something else (a record twice, a version
as text, nesting past Python's limit), data rows that are no rows, a broken optional file that used
to skip its task, and poisoned resume and frozen-sample caches. Each gives exit 2 and one `error:`
line with the fix, as tests/cli/test_bad_inputs.py checks every command's other bad inputs."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.results import write_results
from tests.cli.test_bad_inputs import _expand, _main, assert_one_error_line, left_behind
from tests.helpers import fixture_data, records, save_tiny_model

PIQA = "{name: piqa, lm_eval_task: piqa, metrics: [acc]}"
# A valid one-task suite with one bad value: at the suite's level, or in its task.
SUITE_LEVEL = {
    "lengths_int": "lengths: 1024", "lengths_text": "lengths: 4k", "lengths_twice": "lengths: [1k, 1024]",
    "lengths_twice_text": "lengths: ['4096', 4k, 8k]", "bucket_zero": "bucket_size: 0",
    "bucket_negative": "bucket_size: -2048", "max_length_zero": "max_length: 0", "max_blocks_zero": "max_blocks: 0",
    "training_length_negative": "training_length: -1",
}
TASK_LEVEL = {
    "fewshot_negative": PIQA.replace("metrics", "num_fewshot: -1, metrics"),
    "stop_empty": PIQA.replace("metrics", "stop: [''], metrics"),
    "stop_empty_among_others": PIQA.replace("metrics", "stop: ['x', ''], metrics"),
    "task_lengths_int": PIQA.replace("metrics", "lengths: 2048, metrics"),
    "metrics_text": PIQA.replace("[acc]", "acc"),
}


def suite_text(name: str) -> str:
    level = f"{SUITE_LEVEL[name]}\n" if name in SUITE_LEVEL else ""
    return f"name: bad\ndescription: one bad value\n{level}tasks:\n  - {TASK_LEVEL.get(name, PIQA)}\n"


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """Everything the cases point at, made once: {NAME} in a case's arguments is replaced by its path."""
    root = tmp_path_factory.mktemp("bad-files")
    paths = {"ROOT": root, "MODEL": save_tiny_model(root / "model"), "DATA": fixture_data(root / "data", "piqa")}
    for name in [*SUITE_LEVEL, *TASK_LEVEL]:
        (root / f"suite-{name}.yaml").write_text(suite_text(name))
        paths[f"S_{name.upper()}"] = root / f"suite-{name}.yaml"

    # results files
    good = [r.model_dump(mode="json") for r in records()]
    deep = "[" * 100_000 + "]" * 100_000
    results = {
        "GOOD": good,
        "TWICE": [*good, good[0]],
        "TWICE_OTHER_VALUE": [*good, good[1] | {"value": good[1]["value"] + 1}],
        "VERSION_TEXT": [good[0] | {"schema_version": "99"}, good[1]],
        "VERSION_CURRENT_TEXT": [good[0] | {"schema_version": "2"}, good[1]],
        "VERSION_BOOL": [good[0] | {"schema_version": True}, good[1]],
        "VERSION_FLOAT": [good[0], good[1] | {"schema_version": 2.0}],
    }
    texts = {name: json.dumps(content) for name, content in results.items()} | {
        "DEEP": deep, "DEEP_IN_RECORD": json.dumps(good)[:-1] + ', {"model": ' + "[" * 50_000 + "]" * 50_000 + "}]"}
    for name, text in texts.items():
        file = root / f"results-{name.lower()}.json"
        file.write_text(text)
        paths[f"R_{name}"] = file
    (root / "baseline-twice.json").write_text(json.dumps({"records": [*good, good[0]], "tolerances": {}}))
    paths["B_TWICE"] = root / "baseline-twice.json"
    (root / "baseline-deep.json").write_text('{"records": ' + deep + "}")
    paths["B_DEEP"] = root / "baseline-deep.json"

    # data rows that are no rows, and split files without rows
    for name, broken in {"LIST_ROW": "[1, 2]", "NUMBER_ROW": "7", "TEXT_ROW": '"a row"', "NULL_ROW": "null",
                         "DEEP_ROW": "[" * 100_000 + "]" * 100_000, "EMPTY": "", "BLANK": "\n  \n\n"}.items():
        data = fixture_data(root / f"data-{name.lower()}", "piqa")
        [jsonl] = data.rglob("*.jsonl")
        lines = jsonl.read_text().splitlines()
        jsonl.write_text(broken if name in ("EMPTY", "BLANK") else "\n".join([*lines[:2], broken, *lines[2:]]) + "\n")
        paths[f"D_{name}"] = data

    # the optional RULER QA set, present but broken: the run stops instead of skipping the task
    for name, broken in {"NOT_JSON": '{"question": "cut', "LIST_ROW": '["question"]', "EMPTY": None}.items():
        data = fixture_data(root / f"qa-{name.lower()}", "ruler_qa_1")
        [jsonl] = data.rglob("*.jsonl")
        jsonl.write_text("" if broken is None else jsonl.read_text() + broken + "\n")
        paths[f"QA_{name}"] = data
    return paths


RUN = ["run", "--suite", "table2", "--tasks", "piqa", "--model", "{MODEL}", "--data-dir", "{DATA}", "--limit", "2"]
CORPUS = ["run", "--suite", "extrapolation", "--tasks", "code_standin", "--model", "{MODEL}", "--limit", "1"]
QA = ["run", "--suite", "ruler", "--tasks", "qa_1", "--lengths", "1k", "--model", "{MODEL}"]

CASES = [
    # suite values, at suite load
    *[(["run", "--suite", f"{{S_{name.upper()}}}", "--model", "{MODEL}", "--data-dir", "{DATA}"], fragment)
      for name, fragment in {
          "lengths_int": "lengths 1024 is not a list", "lengths_text": "lengths '4k' is not a list",
          "lengths_twice": "names length 1024 twice", "lengths_twice_text": "names length 4096 twice",
          "bucket_zero": "bucket_size", "bucket_negative": "bucket_size", "max_length_zero": "max_length",
          "max_blocks_zero": "max_blocks", "training_length_negative": "training_length",
          "fewshot_negative": "num_fewshot", "stop_empty": "stop.0", "stop_empty_among_others": "stop.1",
          "task_lengths_int": "lengths 2048 is not a list", "metrics_text": "give a list of metric names"}.items()],
    # arguments
    ([*CORPUS, "--lengths", "1k,1024"], "--lengths 1k,1024 names length 1024 twice"),
    ([*CORPUS, "--lengths", "2k,4k,2048"], "names length 2048 twice"),
    ([*CORPUS, "--lengths", "4k,4K"], "names length 4096 twice"),
    ([*RUN, "--bootstrap-iters=-5"], "--bootstrap-iters"),
    ([*RUN, "--bootstrap-iters", "-1"], "negative"),
    ([*RUN, "--seed", "-1"], "outside numpy's seed range"),
    ([*RUN, "--seed", str(2**32)], "outside numpy's seed range"),
    ([*RUN, "--seed=-4294967296"], "outside numpy's seed range"),
    ([*RUN, "--seed", "9" * 30], "outside numpy's seed range"),
    ([*RUN, "--seed", "1.5"], "not a whole number"),
    (["run", "--suite", "phonebook", "--model", "{MODEL}", "--lengths", "1k", "--limit", "1", "--seed", str(2**32 - 2)],
     "past numpy's largest seed 4294967295: give a --seed of at most 4294967293"),  # three seeds from the last two
    (["check", "{R_GOOD}", "--baseline", "{R_GOOD}", "--allow-difference", ","], "holds an empty name"),
    (["check", "{R_GOOD}", "--baseline", "{R_GOOD}", "--allow-difference", "dtype,"], "holds an empty name"),
    (["check", "{R_GOOD}", "--baseline", "{R_GOOD}", "--allow-difference", " ,device"], "holds an empty name"),
    (["check", "{R_GOOD}", "--baseline", "{R_GOOD}", "--allow-difference", ""], "holds an empty name"),
    # results files: a record twice, a version that is not a whole number, nesting past Python's limit
    *[([command, f"{{R_{name}}}", *extra], fragment)
      for command, extra in (("check", ["--baseline", "{R_GOOD}"]), ("report", []), ("compare", ["{R_GOOD}"]))
      for name, fragment in (("TWICE", "holds two records of m piqa acc"),
                             ("TWICE_OTHER_VALUE", "holds two records of m wikitext word_perplexity"),
                             ("VERSION_TEXT", "schema_version '99', not a whole number"),
                             ("VERSION_CURRENT_TEXT", "schema_version '2', not a whole number"),
                             ("VERSION_BOOL", "schema_version True"), ("VERSION_FLOAT", "schema_version 2.0"),
                             ("DEEP", "nests deeper than Python reads"),
                             ("DEEP_IN_RECORD", "nests deeper than Python reads"))],
    (["check", "{R_GOOD}", "--baseline", "{B_TWICE}"], "holds two records of m piqa acc"),
    (["check", "{R_GOOD}", "--baseline", "{B_DEEP}"], "nests deeper than Python reads"),
    (["compare", "{R_GOOD}", "{R_DEEP}"], "nests deeper than Python reads"),
    # data rows that are no rows; split files without rows
    ([*RUN[:-4], "--data-dir", "{D_LIST_ROW}"], "validation.jsonl line 3 is a JSON list, not an object"),
    ([*RUN[:-4], "--data-dir", "{D_NUMBER_ROW}"], "line 3 is a JSON int, not an object"),
    ([*RUN[:-4], "--data-dir", "{D_TEXT_ROW}"], "line 3 is a JSON str, not an object"),
    ([*RUN[:-4], "--data-dir", "{D_NULL_ROW}"], "line 3 is a JSON NoneType, not an object"),
    ([*RUN[:-4], "--data-dir", "{D_DEEP_ROW}"], "line 3 nests deeper than Python reads"),
    ([*RUN[:-4], "--data-dir", "{D_EMPTY}"], "validation.jsonl holds no rows"),
    ([*RUN[:-4], "--data-dir", "{D_BLANK}"], "validation.jsonl holds no rows"),
    # an optional task's file present but broken: an error, not a silent skip
    ([*QA, "--data-dir", "{QA_NOT_JSON}"], "is not JSON"),
    ([*QA, "--data-dir", "{QA_LIST_ROW}"], "is a JSON list, not an object"),
    ([*QA, "--data-dir", "{QA_EMPTY}"], "holds no rows"),
]


@pytest.mark.parametrize("arguments, fragment", CASES, ids=[" ".join(c[0])[:90] for c in CASES])
def test_bad_value_or_file_is_one_line_and_exit_2(arguments, fragment, place, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default --out (runs/...) lands here
    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    argv = _expand(arguments, place)
    if argv[0] == "run":
        argv += ["--out", str(tmp_path / "out")]
    code = _main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.out
    assert_one_error_line(captured.err, fragment)
    assert not left_behind(tmp_path) and not left_behind(place["ROOT"])


def test_the_same_files_and_values_without_the_fault_are_accepted(place, tmp_path, capsys):
    """The cases' controls: each fault is what is refused, not the file around it."""
    good = place["R_GOOD"]
    assert main(["check", str(good), "--baseline", str(good), "--allow-difference", "dtype,device"]) == 0
    assert main(["report", str(good)]) == 0 and main(["compare", str(good), str(good)]) == 0
    capsys.readouterr()
    from path_eval.suites import load_suite

    fine = place["ROOT"] / "fine.yaml"
    fine.write_text("name: fine\ndescription: x\nlengths: [1k, 2048]\nbucket_size: 1\ntasks:\n"
                    "  - {name: piqa, lm_eval_task: piqa, num_fewshot: 0, metrics: [acc]}\n"
                    "  - {name: niah, generator: ruler/niah_single_1, stop: [\"\\n\"], metrics: [string_match_all]}\n")
    suite = load_suite(str(fine))
    assert suite.lengths == [1024, 2048] and suite.bucket_size == 1 and suite.tasks[1].stop == ["\n"]


def test_a_missing_optional_file_still_skips_its_task_with_a_warning(place, tmp_path, caplog):
    """Only a broken file stops the run: an absent one skips the optional task, as the suite says."""
    from path_eval.plan import resolve_plan
    from path_eval.suites import load_suite

    plan = resolve_plan(load_suite("ruler"), [str(place["MODEL"])], tasks=["vt", "qa_1"], lengths=["1k"],
                        data_dir=tmp_path / "no-data")
    assert [i.task for i in plan.items] == ["vt"] and [s.task for s in plan.skipped] == ["qa_1"]
    assert "qa_1 skipped: missing data file" in caplog.text


# ---------------------------------------------------------------- poisoned caches


@pytest.fixture
def quiet(monkeypatch):
    """--quiet's environment, restored after the test."""
    for name in ("TQDM_DISABLE", "TRANSFORMERS_VERBOSITY", "DATASETS_VERBOSITY", "PATH_EVAL_PROGRESS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))


def without_resume_line(stderr: str) -> str:
    """stderr less its progress bars and the line saying how much the resumed run reuses (it counts the
    cache's rows before their values are read)."""
    return "\n".join(line for line in without_progress_bars(stderr).splitlines() if not line.startswith("resuming "))


def without_progress_bars(stderr: str) -> str:
    """stderr less lm-eval's progress bars: tqdm reads --quiet's TQDM_DISABLE when first imported, which
    in this process was before any run (a command of its own shows none: tests/cli/test_quiet.py)."""
    return "\n".join(line for line in stderr.splitlines() if not line.rstrip().endswith("it/s]"))


@pytest.fixture(scope="module")
def finished_run(place, tmp_path_factory):
    """A finished piqa run (its resume cache holds every request), to poison and run again."""
    out = tmp_path_factory.mktemp("finished") / "out"
    argv = _expand([*RUN, "--quiet", "--out", str(out)], place)
    assert main(argv) == 0
    return argv, out


# a stored row that is not an answer to a loglikelihood request: not JSON, not text, or of another shape
POISONS = ["'{not json'", "X'00ff10'", "'\"text\"'", "'[1.5]'", "'[\"-1.0\", true]'", "'null'", "'3.5'",
           "'" + "[" * 5000 + "]" * 5000 + "'"]


def unfinished_copy(finished: Path, tmp_path: Path) -> Path:
    """A copy of a finished run without its results.json: run again, it resumes from its cache."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    (out / "results.json").unlink()
    return out


@pytest.mark.parametrize("poison", POISONS, ids=[p[:20] for p in POISONS])
def test_a_poisoned_resume_cache_row_is_one_line_naming_the_file(poison, finished_run, quiet, tmp_path, capsys):
    argv, finished = finished_run
    out = unfinished_copy(finished, tmp_path)
    [db] = (out / "resume").glob("*.db")
    with sqlite3.connect(db) as connection:
        connection.execute(f"UPDATE requests SET value = {poison}")
    code = main([*argv[:argv.index("--out")], "--out", str(out)])
    line = assert_one_error_line(without_resume_line(capsys.readouterr().err), f"resume cache {db} has a corrupt row")
    assert code == 2 and "delete the file" in line
    assert not left_behind(out)


def test_a_poisoned_segment_row_is_one_line_naming_the_file(finished_run, quiet, tmp_path, capsys):
    argv, finished = finished_run
    out = unfinished_copy(finished, tmp_path)
    [db] = (out / "resume").glob("*.db")
    with sqlite3.connect(db) as connection:
        connection.execute("INSERT INTO segments (counters) VALUES ('[1, 2]')")
    assert main([*argv[:argv.index("--out")], "--out", str(out)]) == 2
    assert_one_error_line(without_resume_line(capsys.readouterr().err), f"resume cache {db} has a corrupt row")


def test_a_resume_cache_row_of_the_right_shape_is_reused(finished_run, quiet, tmp_path, capsys):
    """The control: the same copy unpoisoned finishes and computes nothing again."""
    argv, finished = finished_run
    out = unfinished_copy(finished, tmp_path)
    assert main([*argv[:argv.index("--out")], "--out", str(out)]) == 0
    [record] = [r for r in json.loads((out / "results.json").read_text()) if r["metric"] == "acc"]
    assert record["provenance"]["requests_computed"] == 0


def frozen_set(tmp_path, rows=({"input": "a", "outputs": ["b"]}, {"input": "c", "outputs": ["d"]})):
    from path_eval.tasks.frozen import freeze

    key = {"task": "t", "length": 128, "seed": 1, "samples": len(rows)}
    return key, freeze(key, lambda: list(rows), root=tmp_path / "frozen")


@pytest.mark.parametrize("key_text", ["{not json", "[1, 2]", "\udcff", "null", "[" * 5000 + "]" * 5000],
                         ids=["not-json", "list", "not-utf8", "null", "deep"])
def test_a_corrupt_frozen_key_file_regenerates_the_set_with_a_warning(key_text, tmp_path, caplog):
    from path_eval.tasks.frozen import freeze, read_frozen

    key, samples = frozen_set(tmp_path)
    key_file = samples.with_suffix(".key.json")
    key_file.write_bytes(key_text.encode("utf-8", "surrogateescape"))
    regenerated = freeze(key, lambda: [{"input": "fresh", "outputs": []}], root=tmp_path / "frozen")
    assert regenerated == samples and read_frozen(samples) == [{"input": "fresh", "outputs": []}]
    assert "do not match their key: regenerating" in caplog.text
    assert json.loads(key_file.read_text())["key"] == key


@pytest.mark.parametrize("content", [b"{cut", b"[1, 2]\n", b"\xff\xfe\n", b"", b"\n", b"[" * 5000 + b"]" * 5000],
                         ids=["not-json", "list-row", "not-utf8", "empty", "blank", "deep"])
def test_frozen_samples_that_their_key_vouches_for_but_are_no_samples_are_one_line(content, tmp_path, capsys):
    """A set whose key file records its sha256 was written by something other than path-eval: the
    run says which file to delete instead of failing inside the generator."""
    from path_eval.data import file_sha256
    from path_eval.errors import PathEvalError
    from path_eval.tasks.frozen import first_frozen, freeze, read_frozen

    key, samples = frozen_set(tmp_path)
    samples.write_bytes(content)
    key_file = samples.with_suffix(".key.json")
    key_file.write_text(json.dumps({"key": key, "samples_sha256": file_sha256(samples)}))
    assert freeze(key, lambda: pytest.fail("a vouched-for set is not regenerated"), root=tmp_path / "frozen") == samples
    for read in (read_frozen, first_frozen):
        with pytest.raises(PathEvalError, match=f"frozen samples {samples} are corrupt: delete it and "
                                                f"{key_file.name}"):
            read(samples)


def test_frozen_samples_holding_line_breaks_other_than_newline_read_back_whole(tmp_path):
    rows = [{"input": f"a{sep}b", "outputs": [f"c{sep}"]} for sep in LINE_BREAKS]
    _, samples = frozen_set(tmp_path, rows)
    from path_eval.tasks.frozen import first_frozen, read_frozen

    assert read_frozen(samples) == rows and first_frozen(samples) == rows[0]


# ---------------------------------------------------------------- sample logs round-trip any text

# Every character Python's str.splitlines breaks at besides "\n": a sample's text may hold any of them
# (LongBench contexts hold U+2028), and JSON writes those above U+001F as they are.
LINE_BREAKS = ["\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_the_line_breaks_are_every_one_splitlines_knows():
    known = {chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) == 2}
    assert known == {sep for sep in LINE_BREAKS if len(sep) == 1} | {"\n"}


def line_break_run(folder, model: str):
    """A longbench_e trec run folder as `eval.py run` leaves it, its samples written by the package's
    own writer, each holding one of LINE_BREAKS in its context, question and generation. Per break
    one sample predicts its answer and one another class: trec's classification_score is 1 and 0 by
    its definition, 0.5 over all samples."""
    from path_eval.plan import PlannedItem, PlannedModel, ResolvedPlan
    from path_eval.results import Provenance, ResultRecord
    from path_eval.samples.logs import write_samples
    from path_eval.suites import load_suite
    from tests.helpers import PROVENANCE

    classes = ["Location", "Number", "Human being"]
    samples = []
    for i, sep in enumerate(LINE_BREAKS):
        for right in (True, False):
            answer = classes[i % 3]
            said = answer if right else classes[(i + 1) % 3]
            doc = {"input": f"Which?{sep}Where is it", "context": f"Question: a{sep}Type: {answer}{sep}",
                   "answers": [answer], "all_classes": classes, "length": 1000 + 3000 * len(samples) % 9000,
                   "_id": f"{i}-{right}"}
            samples.append({"doc_id": len(samples), "doc": doc, "arguments": [(f"{doc['context']}{sep}Type:", {})],
                            "filtered_resps": [f"{said}{sep}and more{sep}"], "target": answer,
                            "classification_score": float(right)})
    write_samples(samples, folder / "samples" / model / "trec.jsonl")
    plan = ResolvedPlan(suite=load_suite("longbench_e"), items=[PlannedItem(task="trec", kind="lm_eval", length=None,
                                                                            models=[model])],
                        models=[PlannedModel(path=folder, name=model, source=str(folder), max_length=16384)],
                        data_dir=folder)
    (folder / "plan.json").write_text(plan.model_dump_json())
    write_results([ResultRecord(suite="longbench_e", model=model, task="trec", length=None,
                                metric="classification_score", value=0.0, stderr=None, n=len(samples),
                                higher_is_better=True, provenance=Provenance(**PROVENANCE))],
                  folder / "results.json")  # n: the samples the logs hold, as a run records it
    return folder, samples


def test_sample_logs_holding_every_line_break_read_back_whole(tmp_path):
    from path_eval.results.sample_logs import read_sample_log

    folder, samples = line_break_run(tmp_path / "run", "m")
    raw = (folder / "samples" / "m" / "trec.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in raw and "\x85" in raw  # written as they are, so the reader must not break at them
    rows = read_sample_log(folder, "m", "trec")
    assert [row["doc"] for row in rows] == [s["doc"] for s in samples]
    assert [row["response"] for row in rows] == [s["filtered_resps"] for s in samples]


def test_rescore_and_compare_read_back_a_run_whose_samples_hold_every_line_break(tmp_path, capsys):
    runs = [line_break_run(tmp_path / name, name)[0] for name in ("a", "b")]
    for run in runs:  # the run's own rule (fox), written over the run's records
        assert main(["rescore", str(run), "--out", str(run)]) == 0
    capsys.readouterr()
    [whole] = [r for r in json.loads((runs[0] / "results.json").read_text()) if r["length_bucket"] is None]
    assert (whole["task"], whole["n"], whole["value"]) == ("trec", 2 * len(LINE_BREAKS), 0.5)
    assert main(["compare", *map(str, runs), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "trec,classification_score,,50.0,50.0,+0.00,McNemar exact p=1" in out.splitlines(), out
