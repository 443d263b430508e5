"""`eval.py check`: 0 within tolerance, 1 with a per-metric diff on a regression, 2 on incomparable inputs."""
import json

import pytest

from path_eval.cli import main
from path_eval.results import write_results
from tests.helpers import records

@pytest.fixture
def baseline(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.01}, "word_perplexity": {"rel": 0.02}},
                                "records": [r.model_dump() for r in records()]}))
    return path


def run_check(tmp_path, baseline, recs, capsys):
    write_results(recs, tmp_path / "run" / "results.json")
    code = main(["check", str(tmp_path / "run"), "--baseline", str(baseline)])
    return code, capsys.readouterr().out


def test_within_tolerance_passes(tmp_path, baseline, capsys):
    code, out = run_check(tmp_path, baseline, records(acc=0.545, ppl=18.3), capsys)
    assert code == 0 and "0 of 2 metrics regressed" in out


def test_improvements_are_not_regressions(tmp_path, baseline, capsys):
    assert run_check(tmp_path, baseline, records(acc=0.70, ppl=12.0), capsys)[0] == 0


def test_perturbed_results_fail_with_a_per_metric_diff(tmp_path, baseline, capsys):
    code, out = run_check(tmp_path, baseline, records(acc=0.53, ppl=18.5), capsys)
    assert code == 1
    assert "REGRESSED m piqa acc: 0.53 vs baseline 0.55" in out
    assert "REGRESSED m wikitext word_perplexity: 18.5 vs baseline 18" in out


def test_a_regression_at_length_zero_names_it(tmp_path, capsys):
    """BABILong's 0k is length 0: the diff line says @0."""
    at_zero = [r.model_copy(update={"length": 0}) for r in records()]
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.01}, "word_perplexity": {"rel": 0.02}},
                                "records": [r.model_dump() for r in at_zero]}))
    code, out = run_check(tmp_path, path, [r.model_copy(update={"length": 0}) for r in records(acc=0.53)], capsys)
    assert code == 1 and "REGRESSED m piqa@0 acc: 0.53 vs baseline 0.55" in out


@pytest.mark.parametrize("change", [{"tokenizer_sha256": "other"}, {"data_fingerprint": "x"}, {"seed": 1},
                                    {"limit": 10}, {"max_length": 4096}])
def test_incomparable_inputs_are_refused(tmp_path, baseline, capsys, change):
    code, out = run_check(tmp_path, baseline, records(**change), capsys)
    assert code == 2 and f"{next(iter(change))} differs" in out


def test_missing_metric_is_incomparable(tmp_path, baseline, capsys):
    code, out = run_check(tmp_path, baseline, records()[:1], capsys)
    assert code == 2 and "missing from the results: m wikitext word_perplexity" in out


def test_either_direction_tolerance_flags_improvements_too(tmp_path, capsys):
    path = tmp_path / "two_sided.json"
    path.write_text(json.dumps({"tolerances": {"word_perplexity": {"rel": 0.02, "either_direction": True},
                                               "acc": {"abs": 0.01}},
                                "records": [r.model_dump() for r in records()]}))
    assert run_check(tmp_path, path, records(acc=0.545, ppl=17.9), capsys)[0] == 0
    code, out = run_check(tmp_path, path, records(acc=0.70, ppl=17.0), capsys)
    assert code == 1 and "REGRESSED m wikitext word_perplexity: 17 vs baseline 18" in out
    assert "ok        m piqa acc" in out


def test_a_tolerance_file_replaces_the_baselines(tmp_path, baseline, capsys):
    """The same records judged under wider tolerances (a retrained model's): exit 1 becomes 0."""
    assert run_check(tmp_path, baseline, records(acc=0.53, ppl=18.5), capsys)[0] == 1
    wider = tmp_path / "wider.json"
    wider.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.03}, "word_perplexity": {"rel": 0.05}},
                                 "derivation": "by hand"}))
    code = main(["check", str(tmp_path / "run"), "--baseline", str(baseline), "--tolerances", str(wider)])
    assert code == 0 and "0 of 2 metrics regressed" in capsys.readouterr().out


@pytest.mark.parametrize("content, says", [
    ("{", "is not JSON"), ('{"acc": {"abs": 1}}', "not an object with 'tolerances'"),
    ('{"tolerances": {"bleu": {"abs": 1}}}', "tolerance 'bleu' matches no baseline metric")])
def test_a_bad_tolerance_file_is_one_line(tmp_path, baseline, capsys, content, says):
    write_results(records(), tmp_path / "run" / "results.json")
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code = main(["check", str(tmp_path / "run"), "--baseline", str(baseline), "--tolerances", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0]
