"""The compact copy of a run folder (training/study.py) that the results commit: its archive of
per-sample logs reads back as the run's own logs do (rescore gives the run's records, the paired tests the
same scores), and compacting again writes the same bytes."""
import json
import tarfile

import pytest

from path_eval.api import load_results
from path_eval.reports.paired import RunSamples
from path_eval.results import load_records
from path_eval.results.rescore import rescore
from tests.helpers import run_cli
from training.study import compact_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "state"
    done = run_cli("run", "--suite", "state_tracking", "--model", "zoo:a5_rope", "--tasks", "a5", "--lengths", "5,10",
                   "--limit", "6", "--device", "cpu", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
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
