"""`python eval.py` with no arguments: a real offline evaluation of the trained zoo (retrieval and
perplexity of four language models at 1x and 2x their training length, four flip-flop models),
under a minute on 2 CPU cores."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_default_demo_runs_offline(tmp_path):
    env = dict(os.environ, PATH_EVAL_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, str(ROOT / "eval.py")], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    records = json.loads((tmp_path / "runs" / "demo" / "results.json").read_text())
    variants = ("rope", "fox", "path", "path_fox")
    overall = {(r["model"], r["task"], r["length"]) for r in records if r["bucket"] is None}
    assert overall == {(v, task, n) for v in variants for task in ("niah_single_1", "phonebook", "heldout")
                       for n in (1024, 2048)} | {(f"flipflop_{v}", "flipflop_in", 512) for v in variants}
    value = {(r["model"], r["task"], r["length"], tuple(r["bucket"] or ())): r["value"] for r in records}
    # Real differences between trained variants: every model finds the needle at its training length
    # (1024); past it RoPE loses it and its perplexity climbs more than FoX's; PaTH's flip-flop error is
    # below RoPE's. The caption carries the run's own ratios.
    assert all(value[v, "niah_single_1", 1024, ()] == 1.0 for v in variants)
    assert value["rope", "niah_single_1", 2048, ()] < value["fox", "niah_single_1", 2048, ()]

    def climb(variant):
        return value[variant, "heldout", 2048, (1024, 2046)] / value[variant, "heldout", 2048, (0, 1023)]
    assert climb("rope") > 1.2 * climb("fox")
    assert value["flipflop_path", "flipflop_in", 512, ()] < value["flipflop_rope", "flipflop_in", 512, ()]
    check_caption(" ".join(result.stdout.split()), records)
    assert (tmp_path / "runs" / "demo" / "perplexity_by_position.png").is_file()


def check_caption(caption: str, records: list[dict]) -> None:
    """Every number of the printed caption is the run's, recomputed here from its records and the
    zoo's model cards; every verdict word follows from those numbers and the threshold it states."""
    variants = ("rope", "fox", "path", "path_fox")
    record = {(r["model"], r["task"], r["length"], tuple(r["bucket"] or ())): r for r in records}
    cards = {v: json.loads((ROOT / "path_eval" / "zoo" / "models" / v / "model_card.json").read_text())
             for v in variants}
    trained = re.search(r"Language models trained at (\d+) tokens \(their model cards\)", caption)
    assert trained, caption
    assert {card["training_length"] for card in cards.values()} == {int(trained[1])}
    span = re.search(r"Held-out perplexity at positions (\d+)-(\d+) over (\d+)-(\d+), in the same (\d+) blocks of "
                     r"(\d+) tokens: (.+?); within ([\d.]+)x of the lowest counts as holding: (.+?); the highest, (\w+)'s, is "
                     r"([\d.]+)x the lowest, (\w+)'s;", caption)
    assert span, caption
    after, before, length = (int(span[1]), int(span[2])), (int(span[3]), int(span[4])), int(span[6])
    assert int(span[5]) == record["rope", "heldout", length, ()]["n"]
    ratios = {v: record[v, "heldout", length, after]["value"] / record[v, "heldout", length, before]["value"]
              for v in variants}
    assert span[7] == ", ".join(f"{v} {ratios[v]:.2f}x" for v in variants)
    holding = [v for v in variants if ratios[v] <= float(span[8]) * min(ratios.values())]
    assert span[9] == f"{', '.join(holding)} hold{'s' if len(holding) == 1 else ''}"
    highest, lowest = max(variants, key=ratios.get), min(variants, key=ratios.get)
    assert (span[10], span[12]) == (highest, lowest)
    assert span[11] == f"{ratios[highest] / ratios[lowest]:.2f}"
    flipflop = re.search(r"Flip-flop error over (\d+) sequences: PaTH ([\d.]+)%, (below|not below) RoPE's ([\d.]+)%",
                         caption)
    assert flipflop, caption
    path, rope = record["flipflop_path", "flipflop_in", 512, ()], record["flipflop_rope", "flipflop_in", 512, ()]
    assert int(flipflop[1]) == rope["n"] == path["n"]
    assert (flipflop[2], flipflop[4]) == (f"{100 * path['value']:.1f}", f"{100 * rope['value']:.1f}")
    assert flipflop[3] == ("below" if path["value"] < rope["value"] else "not below")
    samples = re.search(r"(\d+) samples per retrieval cell", caption)
    assert samples and int(samples[1]) == record["rope", "niah_single_1", 1024, ()]["n"]


def made_up_records(ratios: dict[str, float]) -> list[dict]:
    """The demo's records as a run would write them, with held-out perplexity climbing by `ratios`."""
    from tests.helpers import PROVENANCE

    def record(model, task, length, value, bucket=None, n=3):
        zoo = ROOT / "path_eval" / "zoo" / "models" / model
        return {"suite": "ci", "model": model, "task": task, "length": length, "bucket": bucket, "metric": "m",
                "value": value, "stderr": None, "n": n, "higher_is_better": False,
                "provenance": dict(PROVENANCE, model_path=str(zoo))}

    out = []
    for variant, ratio in ratios.items():
        out += [record(variant, "heldout", n, 20.0) for n in (1024, 2048)]
        out += [record(variant, "heldout", 2048, 20.0, [0, 1023]), record(variant, "heldout", 2048, 20.0 * ratio,
                                                                          [1024, 2046])]
        out += [record(variant, task, n, 1.0) for task in ("niah_single_1", "phonebook") for n in (1024, 2048)]
        out += [record(f"flipflop_{variant}", "flipflop_in", 512, 0.1 if variant == "rope" else 0.0, n=128)]
    return out


@pytest.mark.parametrize("ratios, holding", [({"rope": 2.5, "fox": 1.05, "path": 1.3, "path_fox": 1.08},
                                              "fox, path_fox hold"),
                                             ({"rope": 2.5, "fox": 1.2, "path": 1.3, "path_fox": 1.25},
                                              "fox, path, path_fox hold"),
                                             ({"rope": 1.2, "fox": 2.0, "path": 1.9, "path_fox": 2.1}, "rope holds")])
def test_the_caption_says_what_its_records_say(ratios, holding):
    """The caption made from records passes check_caption, its verdicts follow the threshold, and
    check_caption refuses it against records with another ratio."""
    from path_eval.reports.demo import DemoRun, demo_suite
    from path_eval.results import ResultRecord

    records = made_up_records(ratios)
    caption = DemoRun([ResultRecord.model_validate(r) for r in records], demo_suite(1024)).caption()
    check_caption(caption, records)
    assert f"counts as holding: {holding};" in caption and "PaTH 0.0%, below RoPE's 10.0%" in caption
    with pytest.raises(AssertionError):
        check_caption(caption, made_up_records(dict(ratios, fox=1.5)))
