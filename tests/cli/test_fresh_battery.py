"""A second battery of hostile inputs, each class with members the first batteries
(test_bad_inputs, test_names_and_collisions, test_bad_files_and_values, test_model_mismatch) do not
hold: names Windows or a case- or normalisation-blind filesystem would take as another file, suite
values of the wrong type or meaning that used to run, malformed rows in the per-sample logs that
rescore reads, and config.json sizes torch would fail on deep inside. Each gives exit 2, one
`error:` line that names the fix, and writes nothing."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from path_eval.cli import main
from tests.cli.test_bad_inputs import OFFLINE_VARIABLES, _expand, _main, assert_one_error_line
from tests.helpers import save_tiny_model

ZOO = Path(__file__).parents[2] / "path_eval" / "zoo" / "models"
FLIPFLOP = {"flipflop": {"p_ignore": 0.8}, "lengths": [8], "samples": 2, "metrics": ["flipflop_error"]}
MODEL = "zoo:flipflop_rope"
PHONEBOOK_LOG = "samples/rope/phonebook_1024_s1234.jsonl"


def write_suite(folder: Path, file_name: str, tasks: list[dict] | None = None, **extra) -> Path:
    """A suite of flip-flop tasks (no data to read) as JSON, which YAML reads too."""
    file = folder / f"{file_name}.yaml"
    file.write_text(json.dumps({"name": "fresh", "description": "fresh battery",
                                "tasks": tasks or [{"name": "ff", **FLIPFLOP}], **extra}))
    return file


def task(**changes) -> list[dict]:
    return [{"name": "ff", **FLIPFLOP, **changes}]


def copy_with_config(source: Path, target: Path, **changes) -> None:
    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps(config | changes))


def copy_with_rows(run: Path, target: Path, change) -> None:
    """The run folder copied, its phonebook log's rows passed through `change` (text -> text)."""
    shutil.copytree(run, target)
    log = target / PHONEBOOK_LOG
    log.write_text(change(log.read_text()))


def rows_changed(change):
    def text(log: str) -> str:
        rows = [json.loads(line) for line in log.splitlines()]
        for row in rows:
            change(row)
        return "".join(json.dumps(row) + "\n" for row in rows)
    return text


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """Everything the cases point at, made once: {NAME} in a case's arguments is replaced by its path."""
    root = tmp_path_factory.mktemp("fresh-battery")
    suites = root / "suites"
    suites.mkdir()
    paths = {"ROOT": root}
    suite_cases = {
        "prn": {"name": "prn"}, "dash": {"name": "-rf"},
        "task_aux": {"tasks": task(name="aux")}, "task_dash": {"tasks": task(name="--help")},
        "task_colon": {"tasks": task(name="c:x")},
        "twins_nfc_nfd": {"tasks": [{"name": "caf\u00e9", **FLIPFLOP}, {"name": "cafe\u0301", **FLIPFLOP}]},
        "samples_true": {"tasks": task(samples=True)}, "seeds_true": {"tasks": task(seeds=True)},
        "samples_float": {"tasks": task(samples=2.0)}, "bucket_true": {"bucket_size": True},
        "seeds_huge": {"tasks": task(seeds=10**30)},
        "max_length_short": {"max_length": 4},
        "aggregate_as_task": {"aggregates": [{"name": "ff", "metric": "flipflop_error",
                                              "mean_of": ["ff/flipflop_error"]}]},
        "aggregate_twice": {"aggregates": [{"name": "avg", "metric": "flipflop_error",
                                            "mean_of": ["ff/flipflop_error", "ff/flipflop_error"]}]},
        "aggregate_direction": {"aggregates": [{"name": "avg", "metric": "acc", "mean_of": ["ff/flipflop_error"]}]},
        "buckets_unknown_task": {"length_buckets": {"field": "length", "edges": [4000], "labels": ["a", "b"],
                                                    "tasks": ["nope"]}},
    }
    for name, extra in suite_cases.items():
        paths[f"S_{name.upper()}"] = write_suite(suites, name, **extra)
    (suites / "binary.yaml").write_bytes(b"\xff\xfe\x00name: x")
    paths["S_BINARY"] = suites / "binary.yaml"
    paths["S_PLAIN"] = write_suite(suites, "plain")
    (suites / "suite.txt").write_text(paths["S_PLAIN"].read_text())
    paths["S_TXT"] = suites / "suite.txt"

    run = root / "phonebook-run"  # a run scored from its generations, for rescore
    assert main(["run", "--suite", "ci", "--tasks", "phonebook", "--lengths", "1k", "--limit", "1", "--model",
                 "zoo:rope", "--out", str(run), "--quiet"]) == 0
    paths["RUN"] = run
    broken_runs = {
        "LIST_ROW": lambda log: "[1, 2]\n",
        "EMPTY_LOG": lambda log: "",
        "NO_RESPONSE": rows_changed(lambda row: row.pop("response")),
        "NUMBER_RESPONSE": rows_changed(lambda row: row.update(response=5)),
        "NUMBER_DOC": rows_changed(lambda row: row.update(doc=3)),
        "DOC_WITHOUT_ANSWER": rows_changed(lambda row: row["doc"].pop("answer")),
    }
    for name, change in broken_runs.items():
        copy_with_rows(run, root / f"run-{name.lower()}", change)
        paths[f"R_{name}"] = root / f"run-{name.lower()}"
    (root / "a-folder").mkdir()
    paths["FOLDER"] = root / "a-folder"

    llama, ours = ZOO / "flipflop_rope", save_tiny_model(root / "ours")
    configs = {
        "L_LAYERS_TEXT": (llama, {"num_hidden_layers": "4"}), "L_VOCAB_ZERO": (llama, {"vocab_size": 0}),
        "L_INTERMEDIATE_NEGATIVE": (llama, {"intermediate_size": -5}),
        "L_LAYERS_TRUE": (llama, {"num_hidden_layers": True}),
        "L_ACTIVATION": (llama, {"hidden_act": "nope"}), "L_ARCHITECTURES_TEXT": (llama, {"architectures": "Llama"}),
        "L_KV_GROUPS": (llama, {"num_key_value_heads": 3, "num_attention_heads": 4}),
        "O_HEADS_NOT_DIVIDING": (ours, {"num_heads": 3}), "O_KV_HEADS_ZERO": (ours, {"num_kv_heads": 0}),
        "O_VOCAB_ZERO": (ours, {"vocab_size": 0}), "O_LAYERS_FLOAT": (ours, {"num_hidden_layers": 2.0}),
    }
    for name, (source, changes) in configs.items():
        copy_with_config(source, root / name.lower(), **changes)
        paths[name] = root / name.lower()
    return paths


RUN = ["run", "--model", MODEL, "--suite"]
RESCORE_FIX = "give the samples/ folder the run wrote"
CONFIG = "config.json does not describe a model it can build"

# (arguments, fragments the error line must hold); every case exits 2 and writes nothing.
CASES = [
    # names Windows keeps for devices, or refuses, and names a command line reads as an option
    (["run", "--suite", "{S_TASK_AUX}", "--model", MODEL], ["task name 'aux'", "Windows keeps for a device"]),
    (["run", "--suite", "{S_TASK_COLON}", "--model", MODEL], ["task name 'c:x'", "':', which Windows refuses"]),
    (["run", "--suite", "{S_TASK_DASH}", "--model", MODEL], ["task name '--help'", "starts with '-'"]),
    (["run", "--suite", "{S_PRN}", "--model", MODEL], ["suite name 'prn'", "Windows keeps for a device"]),
    (["run", "--suite", "{S_DASH}", "--model", MODEL], ["suite name '-rf'", "starts with '-'"]),
    (["run", "--suite", "{S_PLAIN}", "--model", f"nul={MODEL}"], ["display name 'nul'", "Windows keeps for a device"]),
    (["run", "--suite", "{S_PLAIN}", "--model", f"COM1.txt={MODEL}"],
     ["display name 'COM1.txt'", "Windows keeps for a device"]),
    (["run", "--suite", "{S_PLAIN}", "--model", f"a:b={MODEL}"], ["display name 'a:b'", "Windows refuses"]),
    # two names, one file where case, normalisation or a trailing dot is ignored
    (["run", "--suite", "{S_TWINS_NFC_NFD}", "--model", MODEL], ["would share the file name", "Unicode normalisation"]),
    (["run", "--suite", "{S_PLAIN}", "--model", f"m.={MODEL}", "--model", f"m={MODEL}"],
     ["models 'm.' and 'm' would share the file name 'm'", "trailing dots"]),
    # suite values of the wrong type or meaning
    ([*RUN, "{S_SAMPLES_TRUE}"], ["tasks.0.samples", "valid integer"]),
    ([*RUN, "{S_SEEDS_TRUE}"], ["tasks.0.seeds", "valid integer"]),
    ([*RUN, "{S_SAMPLES_FLOAT}"], ["tasks.0.samples", "valid integer"]),
    ([*RUN, "{S_BUCKET_TRUE}"], ["bucket_size", "valid integer"]),
    ([*RUN, "{S_SEEDS_HUGE}"], ["tasks.0.seeds", "4294967296"]),
    ([*RUN, "{S_MAX_LENGTH_SHORT}"], ["length 8 exceeds suite fresh's max_length 4"]),
    ([*RUN, "{S_AGGREGATE_AS_TASK}"], ["aggregate ff is named like a task"]),
    ([*RUN, "{S_AGGREGATE_TWICE}"], ["names 'ff/flipflop_error' twice"]),
    ([*RUN, "{S_AGGREGATE_DIRECTION}"], ["averages 'ff/flipflop_error' (where lower is better) as acc"]),
    ([*RUN, "{S_BUCKETS_UNKNOWN_TASK}"], ["length_buckets.tasks names 'nope'"]),
    ([*RUN, "{S_BINARY}"], ["binary.yaml is not a text file"]),
    ([*RUN, "{S_TXT}"], ["suite.txt is not named .yaml, .yml or .json"]),
    # per-sample logs rescore cannot score, and an --out that would replace a run's results
    (["rescore", "{R_LIST_ROW}"], ["holds a JSON list where a sample (an object) belongs", RESCORE_FIX]),
    (["rescore", "{R_EMPTY_LOG}"], ["holds no samples", RESCORE_FIX]),
    (["rescore", "{R_NO_RESPONSE}"], ["sample 0 has response null", RESCORE_FIX]),
    (["rescore", "{R_NUMBER_RESPONSE}"], ["sample 0 has response 5", RESCORE_FIX]),
    (["rescore", "{R_NUMBER_DOC}"], ["sample 0 has doc 3, not an object", RESCORE_FIX]),
    (["rescore", "{R_DOC_WITHOUT_ANSWER}"], ["without the field 'answer'", RESCORE_FIX]),
    (["rescore", "{RUN}", "--out", "{R_NUMBER_DOC}"], ["run-number_doc is the folder of another run"]),
    (["report", "{RUN}", "--html", "{FOLDER}"], ["a-folder is a folder, where path-eval writes a file"]),
    (["generate", "--model", "zoo:rope", "--prompt", ""], ["--prompt '' holds no tokens for zoo:rope's tokenizer"]),
    # config.json sizes and names torch or transformers would fail on deep inside
    (["inspect", "--model", "{L_LAYERS_TEXT}"], [CONFIG, "num_hidden_layers is '4'"]),
    (["inspect", "--model", "{L_LAYERS_TRUE}"], [CONFIG, "num_hidden_layers is True"]),
    (["inspect", "--model", "{L_VOCAB_ZERO}"], [CONFIG, "vocab_size is 0"]),
    (["inspect", "--model", "{L_INTERMEDIATE_NEGATIVE}"], [CONFIG, "intermediate_size is -5"]),
    (["inspect", "--model", "{L_ACTIVATION}"], [CONFIG, "unknown name 'nope'"]),
    (["inspect", "--model", "{L_ARCHITECTURES_TEXT}"], ["names the architecture Llama,"]),
    (["inspect", "--model", "{L_KV_GROUPS}"], [CONFIG, "4 attention heads do not divide into groups of the 3"]),
    (["inspect", "--model", "{O_HEADS_NOT_DIVIDING}"], [CONFIG, "hidden_size 64 is not divisible by its 3"]),
    (["inspect", "--model", "{O_KV_HEADS_ZERO}"], [CONFIG, "num_kv_heads is 0"]),
    (["inspect", "--model", "{O_VOCAB_ZERO}"], [CONFIG, "vocab_size is 0"]),
    (["inspect", "--model", "{O_LAYERS_FLOAT}"], [CONFIG, "num_hidden_layers is 2.0"]),
]


def everything_under(folder: Path) -> dict[Path, float]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if not p.is_symlink()}


def refused_in_one_line(arguments, fragments, place, tmp_path, capsys, monkeypatch) -> None:
    """A battery case: the command exits 2 with one error line holding every fragment, prints no
    traceback and no escape code, and writes nothing in the working folder or the case's files."""
    monkeypatch.chdir(tmp_path)  # a default --out (runs/...) lands here
    for name in OFFLINE_VARIABLES:  # main sets them; restored after the test
        monkeypatch.delenv(name, raising=False)
    argv = _expand(arguments, place)
    before = everything_under(tmp_path), everything_under(place["ROOT"])
    code = _main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.out and "\x1b" not in captured.out + captured.err
    line = assert_one_error_line(captured.err, fragments[0])
    assert all(fragment in line for fragment in fragments), line
    assert (everything_under(tmp_path), everything_under(place["ROOT"])) == before, "a refused command wrote files"


@pytest.mark.parametrize("arguments, fragments", CASES, ids=[" ".join(c[0])[:80] for c in CASES])
def test_fresh_bad_input_is_one_line_and_writes_nothing(arguments, fragments, place, tmp_path, capsys, monkeypatch):
    refused_in_one_line(arguments, fragments, place, tmp_path, capsys, monkeypatch)


def test_the_battery_is_large_enough():
    assert len(CASES) >= 40


def test_the_inputs_without_the_fault_are_accepted(place, tmp_path):
    """The cases' controls: each fault is what is refused, not the file around it."""
    from path_eval.models.loading import check_sizes
    from path_eval.results.rescore import rescore
    from path_eval.samples.logs import name_problem, slug
    from path_eval.suites import load_suite

    records, _ = rescore(place["RUN"])
    assert [r.task for r in records] == ["phonebook"]
    for name in ("con-x", "aux_", "ab:c", "nul", "COM1.txt", "-x", "lpt9"):  # a model's folder is always one
        assert name_problem(slug(name)) is None
    assert name_problem("con-x") is None and name_problem("a-b") is None
    suite = load_suite(str(place["RUN"] / "suite.json"))  # a run folder's suite.json is a suite again
    assert suite.name == "ci" and "phonebook" in [t.name for t in suite.tasks]
    plain = place["ROOT"] / "suites" / "plain.yaml"
    assert load_suite(str(plain)).tasks[0].samples == 2
    check_sizes(tmp_path, {"hidden_size": 64, "num_heads": 2, "num_kv_heads": None, "vocab_size": 8})
    check_sizes(tmp_path, {"hidden_size": 130, "num_attention_heads": 2, "head_dim": 64})


def test_an_infinite_value_is_refused_on_either_side(place, tmp_path, capsys):
    """An infinite value has no tolerance (one relative to it would allow any value at all): check
    refuses it in the baseline and in the results alike, exit 2."""
    records = json.loads((place["RUN"] / "results.json").read_text())
    assert records[0]["higher_is_better"]
    infinite = tmp_path / "infinite.json"
    infinite.write_text(json.dumps([records[0] | {"value": math.inf}]))
    assert main(["check", str(place["RUN"]), "--baseline", str(infinite)]) == 2
    assert "the baseline hold an impossible value" in capsys.readouterr().err
    assert main(["check", str(infinite), "--baseline", str(place["RUN"] / "results.json")]) == 2
    assert "the results hold an impossible value" in capsys.readouterr().err
