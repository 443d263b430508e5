"""`eval.py check`: 0 within tolerance, 1 with a per-metric diff on a regression, 2 on incomparable inputs."""
import json
import math
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.results import load_records, write_results
from tests.helpers import records

@pytest.fixture
def baseline(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"tolerances": {"acc": {"abs": 0.01}, "word_perplexity": {"rel": 0.02}},
                                "records": [r.model_dump() for r in records()]}))
    return path


def run_check(tmp_path, baseline, recs, capsys, *options):
    write_results(recs, tmp_path / "run" / "results.json")
    code = main(["check", str(tmp_path / "run"), "--baseline", str(baseline), *options])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


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


NAMED = [("dtype", {"dtype": "bfloat16"}, "float32", "bfloat16"), ("device", {"device": "cuda:0"}, "cpu", "cuda"),
         ("attention", {"attention_backend": "triton"}, "torch", "triton"),
         ("harness", {"harness_version": "0.2.0"}, "0.1.0", "0.2.0"),
         ("lm-eval", {"lm_eval_version": "0.4.14"}, "0.4.13", "0.4.14")]


@pytest.mark.parametrize("name, change, was, now", NAMED, ids=[n[0] for n in NAMED])
def test_a_named_difference_is_incomparable_unless_accepted(tmp_path, baseline, capsys, name, change, was, now):
    code, out = run_check(tmp_path, baseline, records(**change), capsys)
    assert code == 2
    assert f"incomparable: {name} differs ({was} in the baseline, {now} in the results) in 2 records, e.g. m piqa " \
           f"acc: accept it with --allow-difference {name}" in out
    code, out = run_check(tmp_path, baseline, records(**change), capsys, "--allow-difference", f"{name},dtype")
    assert code == 0 and f"accepted: {name} differs ({was} in the baseline, {now}" in out
    code, out = run_check(tmp_path, baseline, records(acc=0.53, **change), capsys, "--allow-difference", name)
    assert code == 1 and "REGRESSED m piqa acc" in out  # the tolerances still apply


def test_the_device_class_is_compared_not_the_index(tmp_path, capsys):
    path = tmp_path / "gpu_baseline.json"
    path.write_text(json.dumps([r.model_dump() for r in records(device="cuda")]))
    assert run_check(tmp_path, path, records(device="cuda:1"), capsys)[0] == 0


def test_an_unknown_difference_name_is_one_line(tmp_path, baseline, capsys):
    code, out = run_check(tmp_path, baseline, records(), capsys, "--allow-difference", "gpu")
    assert code == 2 and out.strip() == "error: --allow-difference 'gpu' names no difference: choose from dtype, " \
        "device, attention, harness, lm-eval"


def test_the_gpu_run_of_the_ci_suite_needs_device_and_attention_accepted(tmp_path, capsys):
    """The first zoo's ci baseline is a CPU float32 run; its H200 float32 run differs from it in the
    device class and the attention backend (triton), and agrees within the tolerances."""
    first_zoo = Path(__file__).resolve().parents[2] / "results" / "zoo" / "first_zoo"
    gpu = json.loads((first_zoo / "ci_h200_float32.json").read_text())["records"]
    (tmp_path / "gpu" / "results.json").parent.mkdir()
    (tmp_path / "gpu" / "results.json").write_text(json.dumps(gpu))
    baseline = str(first_zoo / "ci_baseline.json")
    assert main(["check", str(tmp_path / "gpu"), "--baseline", baseline]) == 2
    out = capsys.readouterr().out
    assert "incomparable: device differs (cpu in the baseline, cuda in the results) in 108 records" in out
    assert "incomparable: attention differs (torch in the baseline, triton in the results) in 81 records" in out
    assert main(["check", str(tmp_path / "gpu"), "--baseline", baseline, "--allow-difference", "device"]) == 2
    capsys.readouterr()
    assert main(["check", str(tmp_path / "gpu"), "--baseline", baseline, "--allow-difference", "device,attention"]) == 0
    assert "0 of 108 metrics regressed beyond tolerance" in capsys.readouterr().out


@pytest.mark.parametrize("change", [{"data_source": "regenerated"}, {"sample_set": "100"},
                                    {"prompt_parts": ["instruction"]}])
def test_babilong_protocol_differences_are_incomparable(tmp_path, baseline, capsys, change):
    """A prompt switch or another sample set keeps the data fingerprint of the rows they read."""
    code, out = run_check(tmp_path, baseline, records(**change), capsys)
    assert code == 2 and f"{next(iter(change))} differs" in out


def test_a_metric_turned_nan_is_stored_but_refused_by_check(tmp_path, baseline, capsys):
    """A NaN perplexity is no measurement (a run whose model gives NaN logits stops): results.json
    still reads back, and check refuses it in one line (exit 2) instead of comparing it."""
    code, out = run_check(tmp_path, baseline, records(ppl=float("nan")), capsys)
    assert code == 2 and "the results hold an impossible value: m wikitext word_perplexity = nan" in out
    assert math.isnan(load_records(tmp_path / "run")[1].value)


def test_the_last_line_sums_up_and_an_incomparable_check_says_so_first(tmp_path, baseline, capsys):
    code, out = run_check(tmp_path, baseline, records(acc=0.53), capsys)
    lines = out.strip().splitlines()
    assert code == 1 and lines[-1] == ("1 of 2 metrics regressed beyond tolerance, all 2 baseline records "
                                       "compared: regressed (exit 1)")
    code, out = run_check(tmp_path, baseline, records(), capsys)
    assert code == 0 and out.strip().splitlines()[-1] == ("0 of 2 metrics regressed beyond tolerance, all 2 "
                                                          "baseline records compared: within tolerance (exit 0)")
    code, out = run_check(tmp_path, baseline, records(seed=7)[:1], capsys)  # piqa: other seed; wikitext: missing
    lines = out.strip().splitlines()
    assert code == 2
    assert lines[0] == ("not comparable: 2 of 2 baseline records cannot be compared with these results, for the "
                        "reasons below")
    assert [line.split(":")[0] for line in lines[1:-1]] == ["incomparable", "incomparable"]
    assert lines[-1] == ("0 of 0 metrics regressed beyond tolerance, 2 of 2 baseline records incomparable: not "
                         "comparable (exit 2)")


def test_an_xz_compressed_baseline_checks_as_the_plain_one(tmp_path, baseline, capsys):
    import lzma

    packed = tmp_path / "baseline.json.xz"
    packed.write_bytes(lzma.compress(baseline.read_bytes()))
    assert run_check(tmp_path, packed, records(acc=0.40, ppl=25.0), capsys) == \
        run_check(tmp_path, baseline, records(acc=0.40, ppl=25.0), capsys)
    broken = tmp_path / "broken.json.xz"
    broken.write_bytes(b"not xz")
    code, out = run_check(tmp_path, broken, records(), capsys)
    assert code == 2 and f"baseline file {broken} is not an xz archive" in out and "Traceback" not in out
