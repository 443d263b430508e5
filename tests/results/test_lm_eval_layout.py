"""Beside results.json a run writes lm-eval's own layout (OUT/lm_eval/<model>/results_*.json and
samples_<task>_*.jsonl) through lm-eval's EvaluationTracker, for an lm-eval task, a generated one,
a corpus and flip-flop: lm-eval's file helpers and the datasets json loader (the reader the
tracker writes for) read it, and its numbers are the records'. A repeated run replaces the layout;
`--wandb-args` logs through lm-eval's WandbLogger into an offline W&B run; `--hf-hub-log-args`
reach the tracker, and a push (which needs the network) is refused in one line."""
import functools
import json
import math
import shutil
import struct
import sys
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.results import load_records
from tests.helpers import fixture_data, save_tiny_model

SUITE = """name: mix
description: one task of each evaluator
max_length: 257
max_blocks: 2
bucket_size: 64
tasks:
  - {name: hellaswag, lm_eval_task: hellaswag, metrics: [acc, acc_norm], models: [model]}
  - {name: phonebook, generator: phonebook, lengths: [256], samples: 2, stop: ["\\n"],
     metrics: [phonebook_exact_match], models: [model]}
  - {name: heldout, corpus: {package_file: zoo/heldout/jack_sheppard_tail.txt}, lengths: [128],
     metrics: [perplexity], models: [model]}
  - {name: ff, flipflop: {p_ignore: 0.8}, lengths: [64], samples: 3, metrics: [flipflop_error],
     models: [flipflop_rope]}
"""
LIMIT = 3


def run(folder: Path, out: Path, *extra: str) -> None:
    assert main(["run", "--suite", str(folder / "mix.yaml"), "--model", str(folder / "model"), "--model",
                 "zoo:flipflop_rope", "--data-dir", str(folder / "data"), "--limit", str(LIMIT), "--out", str(out),
                 "--quiet", "--bootstrap-iters", "0", *extra]) == 0


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layout")
    save_tiny_model(folder / "model")
    fixture_data(folder / "data", "hellaswag")
    (folder / "mix.yaml").write_text(SUITE)
    run(folder, folder / "out")
    return folder


def layout(out: Path, model: str) -> tuple[dict, dict[str, list[dict]]]:
    """The model's results dict and samples per task, found the way lm-eval's tracker finds them in
    a details repository (lm_eval.utils' file-name helpers), samples read by the datasets json loader."""
    from datasets import load_dataset
    from lm_eval.utils import (get_file_task_name, get_latest_filename, get_results_filenames,
                               get_sample_results_filenames)

    files = [str(p.relative_to(out / "lm_eval").as_posix()) for p in (out / "lm_eval").rglob("*") if p.is_file()]
    files = ["/" + f for f in files]  # the helpers match "/results_" and "/samples_"
    [results_file] = [f for f in get_results_filenames(files) if f.startswith(f"/{model}/")]
    assert get_latest_filename([results_file]) == results_file
    results = json.loads((out / "lm_eval" / results_file[1:]).read_text())
    samples = {}
    for f in get_sample_results_filenames(files):
        if f.startswith(f"/{model}/"):
            task = get_file_task_name(Path(f).name)
            samples[task] = load_dataset("json", data_files=str(out / "lm_eval" / f[1:]), split="train").to_list()
    return results, samples


def test_lm_eval_readers_read_the_layout_and_its_numbers_are_the_records(finished):
    from lm_eval.utils import hash_string

    out = finished / "out"
    records = {(r.model, r.task, r.length, r.metric): r for r in load_records(out) if r.bucket is None}
    results, samples = layout(out, "model")
    assert set(samples) == set(results["configs"]) == {"hellaswag", "phonebook_256_s1234", "heldout_128"}
    assert results["model_name"] == "model" and results["config"]["limit"] == LIMIT
    for task, rows in samples.items():  # the tracker's own task hash over lm-eval's sample hashes
        assert len(rows) == results["n-samples"][task]["effective"] == results["results"][task]["sample_len"]
        assert results["task_hashes"][task] == hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"]
                                                                   for s in rows))
    # lm-eval's task: its results and samples as lm-eval gave them, equal to our records and sample log
    for metric in ("acc", "acc_norm"):
        assert results["results"]["hellaswag"][f"{metric},none"] == records["model", "hellaswag", None, metric].value
    ours = [json.loads(x) for x in (out / "samples" / "model" / "hellaswag.jsonl").read_text().splitlines()]
    theirs = sorted(samples["hellaswag"], key=lambda s: s["doc_id"])
    assert [s["doc_id"] for s in theirs] == list(range(LIMIT))
    assert [(s["acc"], s["acc_norm"], s["doc"], s["target"]) for s in theirs] == \
        [(o["scores"]["acc"], o["scores"]["acc_norm"], o["doc"], str(o["target"])) for o in ours]
    assert [s["arguments"]["gen_args_0"]["arg_0"] for s in theirs] == [o["request"][0][0] for o in ours]
    assert [float(s["filtered_resps"][0][0]) for s in theirs] == [o["response"][0][0] for o in ours]
    # a generated task: lm-eval evaluated its frozen samples
    assert results["results"]["phonebook_256_s1234"]["phonebook_exact_match,none"] == \
        records["model", "phonebook", 256, "phonebook_exact_match"].value
    assert all(s["arguments"]["gen_args_0"]["arg_0"] and s["resps"] for s in samples["phonebook_256_s1234"])
    # a corpus: (log-likelihood, tokens) per block, whose weighted perplexity is the record's
    blocks = samples["heldout_128"]
    assert math.isclose(math.exp(-sum(b["perplexity"][0] for b in blocks) / sum(b["perplexity"][1] for b in blocks)),
                        records["model", "heldout", 128, "perplexity"].value, rel_tol=1e-12)
    assert results["results"]["heldout_128"]["perplexity,none"] == records["model", "heldout", 128, "perplexity"].value
    assert results["higher_is_better"]["heldout_128"] == {"perplexity": False}
    # flip-flop: (wrong, reads) per sequence, whose ratio is the record's error
    flip, flip_samples = layout(out, "flipflop_rope")
    rows = flip_samples["ff_64_s1234"]
    assert len(rows) == LIMIT and [r["doc"]["doc_id"] for r in rows] == list(range(LIMIT))
    error = records["flipflop_rope", "ff", 64, "flipflop_error"].value
    assert sum(r["flipflop_error"][0] for r in rows) / sum(r["flipflop_error"][1] for r in rows) == error
    assert flip["results"]["ff_64_s1234"]["flipflop_error,none"] == error


def wandb_records(run_dir: Path) -> list:
    """The records of an offline W&B run, read from its transaction log (LevelDB log blocks of
    protobuf `Record`s after a 7-byte header)."""
    from wandb.proto import wandb_internal_pb2

    data = next(run_dir.glob("run-*.wandb")).read_bytes()
    block, position, pending, found = 32768, 7, b"", []
    while position + 7 <= len(data):
        left = block - position % block
        if left < 7:
            position += left
            continue
        _, size, kind = struct.unpack("<IHB", data[position:position + 7])
        position += 7
        if kind == 0 and size == 0:
            position += left - 7
            continue
        pending += data[position:position + size]
        position += size
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            found.append(record)
            pending = b""
    return found


def test_wandb_args_log_through_lm_evals_logger_offline(finished, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="W&B is the optional extra path-eval[trackers]")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "out"
    shutil.copytree(finished / "out", out)
    run(finished, out, "--wandb-args", f"project=path-eval-test,dir={tmp_path}")
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 2  # one per model
    logged = {}
    for run_dir in runs:
        for record in wandb_records(run_dir):
            if record.WhichOneof("record_type") == "history":
                logged |= {"/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            if record.WhichOneof("record_type") == "run":
                assert record.run.project == "path-eval-test"
    records = {(r.task, r.metric): r.value for r in load_records(out) if r.bucket is None}
    assert logged["hellaswag/acc"] == records["hellaswag", "acc"]
    assert logged["heldout_128/perplexity"] == records["heldout", "perplexity"]
    assert logged["ff_64_s1234/flipflop_error"] == records["ff", "flipflop_error"]


def test_wandb_writes_into_the_run_folder_unless_told_otherwise(finished, tmp_path, monkeypatch):
    """W&B's own default is the working folder; a run writes nothing outside its --out."""
    pytest.importorskip("wandb", reason="W&B is the optional extra path-eval[trackers]")
    monkeypatch.setenv("WANDB_SILENT", "true")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "out"
    shutil.copytree(finished / "out", out)
    run(finished, out, "--wandb-args", "project=path-eval-test")
    assert len(list((out / "wandb").glob("offline-run-*"))) == 2 and list(elsewhere.iterdir()) == []


def test_a_repeated_run_replaces_the_layout_and_hands_hub_log_args_to_lm_evals_tracker(finished, tmp_path,
                                                                                       monkeypatch):
    from lm_eval.loggers import EvaluationTracker

    trackers = []
    original = EvaluationTracker.__init__

    @functools.wraps(original)  # its signature stays the one the run checks the arguments against
    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        trackers.append(self)

    monkeypatch.setattr(EvaluationTracker, "__init__", spy)
    out = tmp_path / "out"
    shutil.copytree(finished / "out", out)  # its resume cache answers every request
    before = sorted(p.name for p in (out / "lm_eval" / "model").iterdir())
    run(finished, out, "--hf-hub-log-args", "hub_results_org=lab,details_repo_name=details,public_repo=True")
    after = sorted(p.name for p in (out / "lm_eval" / "model").iterdir())
    assert len(after) == len(before) == 4 and after != before  # one results file, one samples file per task
    assert not list((out / "lm_eval").glob(".*"))  # no staging folder left
    _, samples = layout(out, "model")
    assert [s["doc_id"] for s in sorted(samples["hellaswag"], key=lambda s: s["doc_id"])] == list(range(LIMIT))
    assert [t.details_repo for t in trackers] == ["lab/details"] * 2 and not trackers[0].push_samples_to_hub
    # what an upload of the details repository takes: one folder per model, as the tracker names it
    assert sorted(p.name for p in (out / "lm_eval").iterdir()) == ["flipflop_rope", "model"]


@pytest.mark.parametrize("args, line", [
    ("push_results_to_hub=True", "error: --hf-hub-log-args push_results_to_hub: `eval.py run` stays offline"),
    ("hub_org=lab", "error: --hf-hub-log-args hub_org: not an argument of lm-eval's EvaluationTracker"),
    ("lab", "error: argument --hf-hub-log-args: expected `key=value`, got 'lab'"),
    ("{lab", "error: argument --hf-hub-log-args: Invalid JSON: {lab")])
def test_bad_hub_log_args_are_one_line_before_any_model_loads(tmp_path, capsys, args, line):
    try:
        code = main([*run_command(tmp_path), "--hf-hub-log-args", args])
    except SystemExit as stop:  # argparse's own errors exit
        code = stop.code
    assert code == 2
    [error] = capsys.readouterr().err.strip().splitlines()
    assert error.startswith(line)
    assert not (tmp_path / "out").exists()


def native_results(value: float) -> list:
    from path_eval.evaluators import TaskResult, native_output

    rows = [{"block": 0, "nll_sum": [10.0], "count": [4]}]
    return [TaskResult(task="c", length=8, metrics={"perplexity": [(value, None)]}, n=1, data_files=[],
                       data_fingerprint=None, lm_eval=native_output("c_8", {"perplexity": (value, None)}, rows,
                                                                   [{"perplexity": [-10.0, 4]}], "next_token_nll"))]


INFO = dict(model_path="/m", dtype="float32", batch_size=1, device="cpu", limit=None, seed=1, lm_eval_version="0.4.13",
            transformers_version="5", max_length=8, wall_time_s=1.0)


def test_an_interrupted_write_keeps_the_earlier_layout_and_a_failed_one_is_one_line(tmp_path, monkeypatch):
    from lm_eval.loggers import EvaluationTracker

    from path_eval.errors import PathEvalError
    from path_eval.results.lm_eval_layout import write_lm_eval_layout

    first = write_lm_eval_layout(tmp_path, "m", native_results(12.0), INFO)
    files = sorted(p.name for p in first.iterdir())

    def interrupted(self, task_name, samples):
        raise KeyboardInterrupt

    monkeypatch.setattr(EvaluationTracker, "save_results_samples", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_lm_eval_layout(tmp_path, "m", native_results(13.0), INFO)
    assert sorted(p.name for p in first.iterdir()) == files
    assert sorted(p.name for p in (tmp_path / "lm_eval").iterdir()) == ["m"]  # no staging folder left
    monkeypatch.undo()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)  # the tracker logs the error and goes on
    with pytest.raises(PathEvalError, match="did not write all 2 files of m"):
        write_lm_eval_layout(tmp_path, "m", native_results(13.0), INFO)
    monkeypatch.undo()
    [results_file] = first.glob("results_*.json")
    assert json.loads(results_file.read_text())["results"]["c_8"]["perplexity,none"] == 12.0


def run_command(tmp_path) -> list[str]:
    return ["run", "--suite", "ci", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]


def test_wandb_args_without_wandb_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb fails as where it is not installed
    assert main([*run_command(tmp_path), "--wandb-args", "project=p"]) == 2
    assert capsys.readouterr().err.strip() == \
        "error: --wandb-args needs the wandb package: pip install 'path-eval[trackers]'"
    assert not (tmp_path / "out").exists()


def test_an_unknown_wandb_key_is_one_line(tmp_path, capsys):
    pytest.importorskip("wandb", reason="W&B is the optional extra path-eval[trackers]")
    assert main([*run_command(tmp_path), "--wandb-args", "projekt=p"]) == 2
    [error] = capsys.readouterr().err.strip().splitlines()
    assert error.startswith("error: --wandb-args projekt: not an argument of wandb.init")
    assert not (tmp_path / "out").exists()


def test_the_tracker_gets_the_samples_uncopied_and_leaves_them_unchanged(tmp_path, monkeypatch):
    """The tracker replaces a sample's arguments, responses and target with strings as it writes: it
    gets its own sample dicts, their values (documents, the bulk) not copied, and the TaskResults'
    samples stay as they were."""
    import copy

    from lm_eval.loggers import EvaluationTracker

    from path_eval.evaluators import LmEvalOutput, TaskResult
    from path_eval.results.lm_eval_layout import write_lm_eval_layout

    doc = {"context": "a long document " * 100, "answer": 1}
    sample = {"doc_id": 0, "doc": doc, "target": 1, "arguments": [("context", " a")], "resps": [[(-1.5, True)]],
              "filtered_resps": [(-1.5, True)], "filter": "none", "metrics": ["acc"], "doc_hash": "d",
              "prompt_hash": "p", "target_hash": "t", "acc": 1.0}
    before = copy.deepcopy(sample)
    output = LmEvalOutput(tasks={"t": {"results": {"acc,none": 1.0}, "configs": {"task": "t"}, "samples": [sample]}},
                          run={"config": {"model": "path"}})
    result = TaskResult(task="t", length=None, metrics={"acc": [(1.0, None)]}, n=1, data_files=[],
                        data_fingerprint=None, samples=[sample], lm_eval=output)
    handed, save = [], EvaluationTracker.save_results_samples

    def saved(self, task_name, samples):
        handed.extend(samples)
        save(self, task_name, samples)

    monkeypatch.setattr(EvaluationTracker, "save_results_samples", saved)
    folder = write_lm_eval_layout(tmp_path, "m", [result], {"wall_time_s": 1.0})
    assert result.samples == [before] and output.tasks["t"]["samples"] == [before]
    assert handed[0] is not sample and handed[0]["doc"] is doc
    [written] = folder.glob("samples_t_*.jsonl")
    row = json.loads(written.read_text())
    assert row["doc"] == doc and row["target"] == "1" and row["arguments"] == {"gen_args_0": {"arg_0": "context",
                                                                                              "arg_1": " a"}}
