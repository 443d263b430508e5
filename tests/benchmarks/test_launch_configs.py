"""The launch-configuration bench varies one kernel's launch at a time: while the query kernel's
candidates are timed, the transition kernel runs its default launch (and the reverse), and both
defaults are back afterwards. Run on the CPU with the timing replaced by a record of the launches
in force."""
import torch

from benchmarks import launch_configs
from benchmarks.kernels import inputs
from path_eval.kernels.path_attn import prep


def test_each_step_varies_only_its_own_kernel(monkeypatch):
    seen = []

    def timed(fn, warmup, rep):
        seen.append((prep._transition_launch(), prep._queries_launch()))
        return 1.0

    monkeypatch.setattr(launch_configs, "_timed", timed)
    monkeypatch.setattr(launch_configs, "inputs",
                        lambda B, T, H, D, transform, gate: inputs(1, 128, 2, D, transform, gate, dtype=torch.float16,
                                                                   device="cpu"))
    defaults = prep._transition_launch(), prep._queries_launch()
    records = launch_configs.measure([32], 8192, 1, 1)
    steps = [r["step"] for r in records]
    assert steps.count("preparation") == len(launch_configs.TRANSITION)
    assert steps.count("queries") == len(launch_configs.QUERIES)
    for record, (transition, queries) in zip(records, seen):
        if record["step"] == "preparation":
            assert (transition, queries) == (record["config"], defaults[1])
        elif record["step"] == "queries":
            assert (transition, queries) == (defaults[0], record["config"])
    assert (prep._transition_launch(), prep._queries_launch()) == defaults


def test_the_transport_step_times_each_launch_and_row_block_then_restores_both(monkeypatch):
    from path_eval.kernels.path_attn import coarse
    seen = []

    def timed(fn, warmup, rep):
        seen.append((coarse._transport_launch(), coarse._transport_rows(64)))
        return 1.0

    monkeypatch.setattr(launch_configs, "_timed", timed)
    monkeypatch.setattr(launch_configs, "inputs",
                        lambda B, T, H, D, transform, gate: inputs(1, 256, 2, D, transform, gate, dtype=torch.float16,
                                                                   device="cpu"))
    defaults = coarse._transport_launch(), coarse._transport_rows(64)
    records = launch_configs.measure([64], 8192, 1, 1, parts=("transport",))
    timed_records = [r for r in records if r["step"] == "transport"]
    assert [(r["config"], r["rows"]) for r in timed_records] == seen[:len(timed_records)]
    assert len(timed_records) == len(launch_configs.TRANSPORT) + len(launch_configs.TRANSPORT_ROWS)
    assert {r["rows"] for r in timed_records} == {64, 32, 16}
    assert records[-1]["step"] == "transport torch"
    assert (coarse._transport_launch(), coarse._transport_rows(64)) == defaults
