"""The compact copy of a run folder (training/study.py) that the results commit: its archive of
per-sample logs reads back as the run's own logs do (rescore gives the run's records, the paired tests the
same scores), and compacting again writes the same bytes."""
import json
import tarfile

import pytest

from path_eval.api import load_results
from path_eval.cli import main
from path_eval.reports.paired import RunSamples
from path_eval.results import load_records
from path_eval.results.rescore import rescore
from training.study import compact_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "state"
    # the command in this process: the tests read its run folder, not its start-up
    assert main(["run", "--suite", "state_tracking", "--model", "zoo:a5_rope", "--tasks", "a5", "--lengths", "5,10",
                 "--limit", "6", "--device", "cpu", "--out", str(out), "--quiet"]) == 0
    return out


def test_the_copy_reads_back_as_the_run(run, tmp_path):
    copy = tmp_path / "copy"
    rows = compact_run(run, copy)
    assert not (copy / "samples").exists()
    with tarfile.open(copy / "samples.tar.xz") as archive:
        logs = {entry.name: archive.extractfile(entry).read().decode() for entry in archive}
    assert sorted(logs) == sorted(log.relative_to(run).as_posix() for log in (run / "samples").glob("*/*.jsonl"))
    assert rows == sum(len(log.splitlines()) for log in logs.values()) == 12
    assert [r.value for r in rescore(copy)[0]] == [r.value for r in rescore(run)[0]] == \
        [r.value for r in load_records(run)]
    # the records compressed, read back whole through the folder as the run's own file is
    assert not (copy / "results.json").exists() and (copy / "results.json.xz").is_file()
    assert load_records(copy) == load_records(run)
    assert load_results(copy).records == load_results(run).records
    for record in load_records(run):
        ours, theirs = RunSamples(copy).scores(record).strata, RunSamples(run).scores(record).strata
        assert len(ours) == len(theirs) > 0
        for (weight, a), (weight_b, b) in zip(ours, theirs):
            assert weight == weight_b and a.keys == b.keys and (a.numerator == b.numerator).all() and \
                (a.denominator == b.denominator).all()
    first = json.loads(next(iter(logs.values())).splitlines()[0])
    assert isinstance(first["input"], list)  # A5's words are short: kept whole


def test_compacting_again_writes_the_same_bytes(run, tmp_path):
    compact_run(run, tmp_path / "a")
    compact_run(run, tmp_path / "b")
    for name in ("samples.tar.xz", "results.json.xz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_broken_records_archive_is_one_line(run, tmp_path):
    from path_eval.errors import PathEvalError

    copy = tmp_path / "copy"
    compact_run(run, copy)
    (copy / "results.json.xz").write_bytes(b"not xz")
    with pytest.raises(PathEvalError, match=r"results\.json\.xz is not a path-eval results file: not an xz archive"):
        load_records(copy)


def test_a_broken_or_incomplete_archive_is_one_line(run, tmp_path):
    from path_eval.errors import PathEvalError
    from path_eval.results.sample_logs import read_sample_log

    copy = tmp_path / "copy"
    compact_run(run, copy)
    assert read_sample_log(copy, "a5_rope", "a5@5")
    with pytest.raises(PathEvalError, match=r"no per-sample log .*samples\.tar\.xz/samples/a5_rope/a5@40\.jsonl"):
        read_sample_log(copy, "a5_rope", "a5@40")
    (copy / "samples.tar.xz").write_bytes(b"not an archive")
    with pytest.raises(PathEvalError, match="is not a tar.xz archive of per-sample logs"):
        read_sample_log(copy, "a5_rope", "a5@5")


@pytest.fixture(scope="module")
def parts(tmp_path_factory, run):
    """Three runs of one suite and settings, each with its own model (the zoo's A5 model and copies of
    it under other names), and one run of the first two models: what merging their runs should
    reproduce."""
    import shutil

    from path_eval.models.zoo import zoo_models

    root = tmp_path_factory.mktemp("parts")
    twin = shutil.copytree(zoo_models("a5_rope")[0], root / "a5_twin")

    def run_of(*models, name):
        out = root / name
        assert main(["run", "--suite", "state_tracking", "--model", *models, "--tasks", "a5", "--lengths", "5,10",
                     "--limit", "6", "--device", "cpu", "--out", str(out), "--quiet"]) == 0  # in this process too
        return out
    triplet = shutil.copytree(zoo_models("a5_rope")[0], root / "a5_triplet")
    return run, run_of(str(twin), name="twin"), run_of(str(triplet), name="triplet"), \
        run_of("zoo:a5_rope", str(twin), name="both")


def key(record):
    return record.model, record.task, record.length, record.metric, record.value, record.stderr, record.n


def test_merged_copies_read_as_one_run_of_all_their_models(parts, tmp_path):
    from path_eval.results.sample_logs import read_sample_log
    from training.study import merge_copies

    first, second, third, both = parts
    compact_run(first, tmp_path / "first")
    compact_run(second, tmp_path / "second")
    rows = merge_copies([tmp_path / "first", tmp_path / "second"], tmp_path / "merged")
    merged = tmp_path / "merged"
    assert rows == 24  # 2 models x 2 lengths x 6 samples
    assert sorted(map(key, load_records(merged))) == sorted(map(key, load_records(both)))
    assert sorted(map(key, rescore(merged)[0])) == sorted(map(key, load_records(both)))
    plan, plan_both = (json.loads((folder / "plan.json").read_text()) for folder in (merged, both))
    assert sorted(m["name"] for m in plan["models"]) == sorted(m["name"] for m in plan_both["models"])
    assert [(i["task"], i["length"], sorted(i["models"])) for i in plan["items"]] == \
        [(i["task"], i["length"], sorted(i["models"])) for i in plan_both["items"]]
    assert plan["skipped"] == plan_both["skipped"]
    for model in ("a5_rope", "a5_twin"):
        assert read_sample_log(merged, model, "a5@10") == read_sample_log(both, model, "a5@10")
    report = load_results(merged).report("state_tracking", "markdown")
    assert report == load_results(tmp_path / "first", tmp_path / "second").report("state_tracking", "markdown")
    assert [part["part"] for part in json.loads((merged / "parts.json").read_text())] == ["first", "second"]
    assert json.loads((merged / "parts.json").read_text())[1]["timings"] == json.loads((second / "timings.json").read_text())
    # a merged copy merges again, its parts kept: one part at a time, as device calls come
    compact_run(third, tmp_path / "third")
    assert merge_copies([merged, tmp_path / "third"], tmp_path / "again") == 36
    assert [part["part"] for part in json.loads((tmp_path / "again" / "parts.json").read_text())] == \
        ["first", "second", "third"]
    assert sorted(map(key, load_records(tmp_path / "again"))) == \
        sorted(map(key, [*load_records(both), *load_records(third)]))
    # the shared inputs once: smaller than the two archives apart
    sizes = [(folder / "samples.tar.xz").stat().st_size for folder in (tmp_path / "first", tmp_path / "second", merged)]
    assert sizes[2] < sizes[0] + sizes[1]


def test_merging_refuses_a_model_in_two_parts_or_parts_of_other_settings(parts, tmp_path):
    from path_eval.errors import PathEvalError
    from training.study import merge_copies

    first, second, _, both = parts
    for name, folder in (("first", first), ("second", second), ("both", both)):
        compact_run(folder, tmp_path / name)
    with pytest.raises(PathEvalError, match="model a5_twin is in both .*second and .*both: a model belongs to one part"):
        merge_copies([tmp_path / "second", tmp_path / "both"], tmp_path / "merged")
    plan = json.loads((tmp_path / "second" / "plan.json").read_text())
    (tmp_path / "second" / "plan.json").write_text(json.dumps(plan | {"limit": 5}))
    with pytest.raises(PathEvalError, match="runs of different suites or settings"):
        merge_copies([tmp_path / "first", tmp_path / "second"], tmp_path / "merged")
    with pytest.raises(PathEvalError, match="is not a compact copy"):
        merge_copies([tmp_path / "first", second], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()
