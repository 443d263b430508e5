"""The compact copy of a run folder (training/study.py) that the results commit: its gzip-compressed
per-sample logs read back as the run's own do (rescore gives the run's records, the paired tests the
same scores), and compacting again writes the same bytes."""
import gzip
import json

import pytest

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
    logs = sorted((copy / "samples").glob("*/*"))
    assert logs and all(log.name.endswith(".jsonl.gz") for log in logs)
    assert rows == sum(len(gzip.decompress(log.read_bytes()).decode().splitlines()) for log in logs) == 12
    assert [r.value for r in rescore(copy)[0]] == [r.value for r in rescore(run)[0]] == \
        [r.value for r in load_records(run)]
    for record in load_records(run):
        ours, theirs = RunSamples(copy).scores(record).strata, RunSamples(run).scores(record).strata
        assert len(ours) == len(theirs) > 0
        for (weight, a), (weight_b, b) in zip(ours, theirs):
            assert weight == weight_b and a.keys == b.keys and (a.numerator == b.numerator).all() and \
                (a.denominator == b.denominator).all()
    first = json.loads(gzip.decompress(logs[0].read_bytes()).decode().splitlines()[0])
    assert isinstance(first["input"], list)  # A5's words are short: kept whole


def test_compacting_again_writes_the_same_bytes(run, tmp_path):
    compact_run(run, tmp_path / "a")
    compact_run(run, tmp_path / "b")
    for log in (tmp_path / "a" / "samples").glob("*/*"):
        assert log.read_bytes() == (tmp_path / "b" / log.relative_to(tmp_path / "a")).read_bytes()
