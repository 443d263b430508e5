"""`report --layout state_tracking` on records made here with known values: the fewest layers a
majority of seeds solve, the MQRAR-N cells, the directions' verdicts and their sign test, worked out
by hand; a model whose name contradicts its checkpoint's variant is left out."""
import math

import pytest

from path_eval.reports.state_tracking import (NOT_REPRODUCED, REPRODUCED, UNDECIDED, UNTESTED, fewest_layers, sign_test,
                                              state_tracking_figure, state_tracking_tables, trained)
from path_eval.reports.stored import StoredRun
from path_eval.results import Provenance, ResultRecord
from path_eval.suites import load_suite
from tests.helpers import PROVENANCE

SUITE = load_suite("state_tracking")
CONFIG = {"rope": ("llama", None), "fox": ("forgetting_transformer", "fox"), "path": ("path_attn", "path"),
          "path_fox": ("path_attn", "path_fox")}


def record(model, variant, task, length, metric, value):
    model_type, attention = CONFIG[variant]
    return ResultRecord(suite="state_tracking", model=model, task=task, length=length, metric=metric, value=value,
                        stderr=0.01, n=1024, higher_is_better=True,
                        provenance=Provenance(**(PROVENANCE | {"model_type": model_type, "variant": attention})))


# A5 at k = 20, per variant: depth -> the three seeds' token accuracy (sequence and final: value / 2).
A5 = {"rope": {1: [0.2, 0.2, 0.3], 2: [0.5, 0.95, 0.4], 3: [0.92, 0.95, 0.5], 4: [0.99, 0.99, 0.99]},
      "fox": {1: [0.2, 0.2, 0.2], 2: [0.3, 0.3, 0.3], 3: [0.5, 0.95, 0.6], 4: [0.95, 0.7, 0.96]},
      "path": {1: [0.3, 0.3, 0.3], 2: [0.91, 0.97, 0.2], 3: [0.99, 0.99, 0.99], 4: [1.0, 1.0, 1.0]},
      "path_fox": {1: [0.95, 0.95, 0.95], 2: [1.0, 1.0, 1.0], 3: [1.0, 1.0, 1.0], 4: [1.0, 1.0, 1.0]}}
# MQRAR-N, per variant: N -> the three seeds' token accuracy.
MQRAR = {"rope": {n: [0.5, 0.4, 0.45] for n in (1, 2, 3, 4)},
         "fox": {1: [0.8, 0.85, 0.9], 2: [0.6, 0.7, 0.65], 3: [0.3, 0.35, 0.2], 4: [0.1, 0.1, 0.1]},
         "path": {1: [0.99, 0.98, 0.99], 2: [0.97, 0.95, 0.96], 3: [0.93, 0.5, 0.94], 4: [0.4, 0.3, 0.5]},
         "path_fox": {n: [0.99, 0.99, 0.99] for n in (1, 2, 3, 4)}}


def study_records():
    records = []
    for variant, by_depth in A5.items():
        for depth, seeds in by_depth.items():
            for seed, value in enumerate(seeds):
                name = f"a5_{variant}_L{depth}_s{seed}"
                records += [record(name, variant, "a5", 20, "token_accuracy", value),
                            record(name, variant, "a5", 20, "sequence_accuracy", value / 2),
                            record(name, variant, "a5", 20, "final_accuracy", value / 2),
                            record(name, variant, "a5", 40, "token_accuracy", value / 3)]
    for variant, by_n in MQRAR.items():
        for n, seeds in by_n.items():
            records += [record(f"mqrar{n}_{variant}_s{seed}", variant, f"mqrar_{n}", 768, "token_accuracy", value)
                        for seed, value in enumerate(seeds)]
    return records


def runs(records=None):
    return [StoredRun(None, study_records() if records is None else records, {"state_tracking": SUITE})]


def directions(records=None) -> dict[str, tuple[str, str]]:
    """The directions table: claim -> (measured, verdict)."""
    title, _, rows, _ = state_tracking_tables(runs(records), {"state_tracking": SUITE})[-1]
    assert title.startswith("The PaTH paper's directions")
    return {claim: (measured, verdict) for claim, _, measured, verdict in rows}


def test_fewest_layers_needs_a_majority_of_seeds():
    assert fewest_layers(A5["rope"]) == 3  # depth 2: one seed of three; depth 3: two of three
    assert fewest_layers(A5["fox"]) == 4 and fewest_layers(A5["path"]) == 2 and fewest_layers(A5["path_fox"]) == 1
    assert fewest_layers({1: [0.95, 0.5], 2: [0.95, 0.95]}) == 2  # a tie is no majority


def test_sign_test_is_the_binomial_tail():
    assert sign_test([1.0] * 9) == 1 / 512
    assert sign_test([1, 1, -1, 0]) == pytest.approx((math.comb(3, 2) + 1) / 8)
    assert sign_test([0, 0]) == 1.0


def test_directions_follow_the_data():
    verdicts = directions()
    measured, verdict = verdicts["PaTH solves MQRAR-N for N < 4"]
    assert verdict == REPRODUCED and "N=3: 79.0 (2/3)" in measured
    measured, verdict = verdicts["FoX struggles on MQRAR-N (N < 4) where PaTH succeeds"]
    # PaTH alone solves N=1 s0, s1 (FoX's s2 reaches 0.9: both), N=2 all three, N=3 s0, s2: 7 of 7, 1/128
    assert verdict == REPRODUCED and measured.startswith("9 pairs: PaTH alone solves 7, FoX alone 0, p = 0.00781")
    measured, verdict = verdicts["PaTH solves A5 with fewer layers than RoPE and FoX (product form, token accuracy)"]
    assert verdict == REPRODUCED and measured == "path 2, rope 3, fox 4"
    # sequence and final accuracy are half the token accuracy: no depth reaches 90%, nobody solves it
    assert verdicts["PaTH solves A5 with fewer layers than RoPE and FoX (product form, sequence accuracy)"][1] == \
        UNDECIDED
    assert all(verdict == UNTESTED for claim, (_, verdict) in verdicts.items() if "Flip-flop" in claim)


def test_a_direction_fails_when_the_data_say_otherwise():
    flipped = [r.model_copy(update={"value": 0.1}) if r.model.startswith("mqrar2_path_") else r
               for r in study_records()]
    verdicts = directions(flipped)
    assert verdicts["PaTH solves MQRAR-N for N < 4"][1] == NOT_REPRODUCED
    assert verdicts["FoX struggles on MQRAR-N (N < 4) where PaTH succeeds"][1] == NOT_REPRODUCED  # 4 of 4: p 1/16
    # PaTH solves A5 at no depth while RoPE (3 layers) and FoX (4) do: not reproduced, not undecided
    unsolved = [r.model_copy(update={"value": 0.1}) if r.model.startswith("a5_path_L") else r for r in study_records()]
    measured, verdict = directions(unsolved)[
        "PaTH solves A5 with fewer layers than RoPE and FoX (product form, token accuracy)"]
    assert verdict == NOT_REPRODUCED and measured == "path >4, rope 3, fox 4"


def test_tables_hold_the_cells_worked_out_by_hand():
    tables = {title: (header, rows) for title, header, rows, _ in state_tracking_tables(runs(), {"state_tracking": SUITE})}
    header, rows = tables["MQRAR-N: token accuracy at the queries"]
    assert header == ["variant", "N=1", "N=2", "N=3", "N=4"]
    assert rows[2] == ["path", "98.7 (3/3)", "96.0 (3/3)", "79.0 (2/3)", "40.0 (0/3)"]
    header, rows = tables["A5 word problem (product form), k = 20: token accuracy"]
    assert header[-1] == "fewest layers" and rows[0] == ["rope", "23.3 (0/3)", "61.7 (1/3)", "79.0 (2/3)",
                                                         "99.0 (3/3)", "3"]
    _, rows = tables["A5 word problem (product form): fewest layers by length (token / sequence / final accuracy)"]
    assert rows[2] == ["path", "2 / >4 / >4", ">4 / - / -"]


def test_a_name_its_checkpoint_contradicts_is_left_out():
    mislabelled = record("a5_path_L1_s0", "rope", "a5", 20, "token_accuracy", 0.9)
    assert trained(mislabelled) is None and trained(record("a5_rope_L1_s0", "rope", "a5", 20, "token_accuracy",
                                                           0.9)).depth == 1


def test_figure_2_has_the_mqrar_a5_and_length_panels():
    figure = state_tracking_figure(study_records(), {"state_tracking": SUITE})
    assert [axis.get_title() for axis in figure.axes] == ["MQRAR-N", "A5 (product), k = 20", "A5 (product), k = 20",
                                                      "A5 (product), 4 layers"]
    assert state_tracking_figure([r for r in study_records() if r.task == "nothing"], {"state_tracking": SUITE}) is None


def test_each_a5_form_gets_its_own_tables_and_directions(tmp_path):
    suite_file = tmp_path / "state_tracking.yaml"
    suite_file.write_text("name: state_tracking\ndescription: x\ntasks:\n"
                          "  - {name: a5, a5: {form: product}, lengths: [20], metrics: [token_accuracy]}\n"
                          "  - {name: a5_id, a5: {form: identity}, lengths: [20], metrics: [token_accuracy]}\n")
    suite = load_suite(str(suite_file))
    product = [r for r in study_records() if r.task == "a5" and r.metric == "token_accuracy" and r.length == 20]
    identity = [r.model_copy(update={"task": "a5_id", "value": 0.5}) for r in product]
    tables = {title: rows for title, _, rows, _ in
              state_tracking_tables([StoredRun(None, product + identity, {"state_tracking": suite})],
                                    {"state_tracking": suite})}
    assert tables["A5 word problem (product form), k = 20: token accuracy"][2][-1] == "2"  # path, as above
    assert tables["A5 word problem (identity form), k = 20: token accuracy"][2][1:] == ["50.0 (0/3)"] * 4 + [">4"]
    claims = {row[0]: row[3] for row in tables["The PaTH paper's directions (section 4.1, Figure 2)"]}
    assert claims["PaTH solves A5 with fewer layers than RoPE and FoX (product form, token accuracy)"] == REPRODUCED
    # no variant reaches 90% at any depth: the models decide nothing about the attention
    assert claims["PaTH solves A5 with fewer layers than RoPE and FoX (identity form, token accuracy)"] == UNDECIDED


def test_a_difference_between_two_failures_is_no_success_of_paths():
    """PaTH above FoX in every pair, but neither solving any (1.1% against 0.0%): nothing decided;
    FoX solving every pair beside PaTH: FoX does not struggle."""
    def with_mqrar(path, fox):
        kept = [r for r in study_records() if not r.model.startswith(("mqrar1_", "mqrar2_", "mqrar3_"))]
        return kept + [record(f"mqrar{n}_{variant}_s{seed}", variant, f"mqrar_{n}", 768, "token_accuracy", value)
                       for n in (1, 2, 3) for variant, value in (("path", path), ("fox", fox)) for seed in range(3)]

    measured, verdict = directions(with_mqrar(0.011, 0.0))["FoX struggles on MQRAR-N (N < 4) where PaTH succeeds"]
    assert verdict == UNDECIDED and measured.startswith("9 pairs: PaTH alone solves 0, FoX alone 0")
    assert directions(with_mqrar(0.99, 0.95))["FoX struggles on MQRAR-N (N < 4) where PaTH succeeds"][1] == \
        NOT_REPRODUCED
