"""Bad input to every command: exit 2, exactly one `error:` line on stderr that names the problem and
says what to do, no traceback, and no results or half-written file left behind. Run in-process
(`main`) to stay quick; inputs checked before a model loads come first, the few that need a load
use a tiny checkpoint."""
from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest
import torch

from path_eval.cli import main
from tests.helpers import fixture_data, records, save_tiny_model

# Words of a fix: each error line must say what to do, not only what is wrong.
FIX_WORDS = ("give", "run ", "copy", "delete", "use ", "drop", "choose", "see ", "remove", "download", "free ",
             "pass ", "raise", "put ", "fix", "check", "leave")


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """Everything the cases point at, made once: {NAME} in a case's arguments is replaced by its path."""
    root = tmp_path_factory.mktemp("bad-inputs")
    model = save_tiny_model(root / "model")
    data = fixture_data(root / "data", "hellaswag", "piqa")
    paths = {"ROOT": root, "MODEL": model, "DATA": data}

    def broken_model(name: str, change) -> None:
        folder = root / name
        shutil.copytree(model, folder)
        change(folder)
        paths[name.upper()] = folder

    weights = (model / "model.safetensors").read_bytes()
    broken_model("truncated", lambda f: (f / "model.safetensors").write_bytes(weights[: len(weights) // 3]))
    broken_model("random_bytes", lambda f: (f / "model.safetensors").write_bytes(bytes(range(256)) * 64))
    broken_model("empty_weights", lambda f: (f / "model.safetensors").write_bytes(b""))
    broken_model("bad_tokenizer", lambda f: ((f / "tokenizer.model").write_bytes(b"\x00garbage" * 50),
                                             (f / "tokenizer_config.json").write_text('{"tokenizer_class": '
                                                                                      '"LlamaTokenizer"}')))
    broken_model("bad_config", lambda f: (f / "config.json").write_text('{"model_type": "path_eval", '))
    broken_model("list_config", lambda f: (f / "config.json").write_text("[1, 2]"))
    broken_model("binary_config", lambda f: (f / "config.json").write_bytes(b"\xff\xfe\x00\x01"))
    broken_model("unknown_type", lambda f: (f / "config.json").write_text('{"model_type": "no_such_model"}'))
    broken_model("no_weights", lambda f: (f / "model.safetensors").unlink())
    broken_model("bad_index", lambda f: ((f / "model.safetensors").unlink(),
                                         (f / "model.safetensors.index.json").write_text('{"metadata": {}}')))
    (root / "no_config").mkdir()
    paths["NO_CONFIG"] = root / "no_config"

    corrupt = fixture_data(root / "corrupt-data", "hellaswag")
    [jsonl] = corrupt.rglob("*.jsonl")
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[:3] + ['{"ctx": "cut off here', *lines[3:]]) + "\n")
    paths["CORRUPT_DATA"] = corrupt

    (root / "a-file").write_text("not a folder")
    paths["FILE"] = root / "a-file"
    (root / "empty-folder").mkdir()
    paths["EMPTY_FOLDER"] = root / "empty-folder"
    models_dir = root / "models"
    shutil.copytree(model, models_dir / "good")
    shutil.copytree(paths["BAD_CONFIG"], models_dir / "broken")
    paths["MODELS"] = models_dir

    suites = root / "suites"
    suites.mkdir()
    (suites / "broken.yaml").write_text("name: broken\ntasks: [\n")
    (suites / "empty.yaml").write_text("")
    (suites / "unknown_key.yaml").write_text("name: x\ndescription: x\nbogus: 1\ntasks:\n  - {name: piqa, lm_eval_task: piqa, metrics: [acc]}\n")
    paths["BROKEN_SUITE"], paths["EMPTY_SUITE"] = suites / "broken.yaml", suites / "empty.yaml"
    paths["UNKNOWN_KEY_SUITE"] = suites / "unknown_key.yaml"

    results = root / "stored-results.json"
    from path_eval.results import write_results
    write_results(records(), results)
    paths["RESULTS"] = results
    record_dicts = [r.model_dump(mode="json") for r in records()]
    baselines = {
        "EMPTY_FILE": "", "NOT_JSON": "{not json", "EMPTY_LIST": "[]", "EMPTY_OBJECT": "{}",
        "NO_RECORDS": json.dumps({"records": []}), "RECORDS_STRING": json.dumps({"records": "x"}),
        "JUNK_RECORDS": json.dumps([{"model": "m"}]), "A_NUMBER": "42",
        "EXTRA_KEY": json.dumps({"records": record_dicts, "tolerance": {"acc": {"abs": 1}}}),
        "UNKNOWN_KIND": json.dumps({"records": record_dicts, "tolerances": {"acc": {"ab": 0.01}}}),
        "UNKNOWN_METRIC": json.dumps({"records": record_dicts, "tolerances": {"acc_nrom": {"abs": 0.01}}}),
        "UNKNOWN_TASK_METRIC": json.dumps({"records": record_dicts, "tolerances": {"piqa/accc": {"abs": 0.01}}}),
        "STRING_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": {"abs": "0.01"}}}),
        "NEGATIVE_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": {"rel": -1}}}),
        "BOOL_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": {"abs": True}}}),
        "NULL_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": {"abs": None}}}),
        "NUMBER_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": 0.01}}),
        "EMPTY_TOLERANCE": json.dumps({"records": record_dicts, "tolerances": {"acc": {}}}),
        "LIST_TOLERANCES": json.dumps({"records": record_dicts, "tolerances": [0.01]}),
        "BINARY": b"\x80\x81\x82",
    }
    for name, content in baselines.items():
        target = root / f"baseline-{name.lower()}.json"
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[f"B_{name}"] = target
    (root / "empty-results").mkdir()
    paths["NO_RESULTS_DIR"] = root / "empty-results"
    (root / "results-not-json.json").write_text("nope")
    paths["RESULTS_NOT_JSON"] = root / "results-not-json.json"
    (root / "results-empty.json").write_text("[]")
    paths["RESULTS_EMPTY"] = root / "results-empty.json"
    (root / "not-a-wheel.whl").write_text("plain text")
    paths["NOT_A_WHEEL"] = root / "not-a-wheel.whl"
    return paths


RUN = ["run", "--suite", "table2", "--tasks", "piqa", "--model", "{MODEL}", "--data-dir", "{DATA}", "--limit", "2"]
CORPUS = ["run", "--suite", "extrapolation", "--tasks", "code_standin", "--model", "{MODEL}", "--limit", "1"]
RULER = ["run", "--suite", "ruler", "--tasks", "niah_single_1", "--model", "{MODEL}", "--data-dir", "{DATA}"]
MODEL = ["--model", "{MODEL}"]

# (arguments, fragment the error line must contain); every case exits 2. Cheap ones first.
CASES = [
    # argparse: missing, unknown and malformed options
    (["run"], "required"),
    (["run", "--suite", "table2"], "--model"),
    (["bogus-command"], "invalid choice"),
    ([*RUN, "--bogus"], "unrecognized arguments"),
    ([*RUN, "--batch-size", "0"], "--batch-size"),
    ([*RUN, "--batch-size", "-1"], "below 1"),
    ([*RUN, "--batch-size", "two"], "not a whole number"),
    ([*RUN, "--batch-size", "1.5"], "not a whole number"),
    ([*RUN[:-1], "0"], "--limit"),
    ([*RUN[:-1], "-3"], "--limit"),
    ([*RUN[:-1], "all"], "not a whole number"),
    ([*RUN, "--max-length", "0"], "--max-length"),
    ([*RUN, "--max-length", "big"], "not a whole number"),
    ([*RUN, "--seed", "x"], "--seed"),
    ([*RUN, "--bootstrap-iters", "many"], "--bootstrap-iters"),
    ([*CORPUS, "--lengths", "-4k"], "--lengths"),
    (["report"], "required"),
    (["report", "{RESULTS}", "--format", "html"], "invalid choice"),
    (["compare", "{RESULTS}", "--format", "pdf"], "invalid choice"),
    (["check", "{RESULTS}"], "--baseline"),
    (["inspect"], "--model"),
    (["generate", *MODEL], "--prompt"),
    (["generate", *MODEL, "--prompt", "hi", "--max-new-tokens", "-1"], "--max-new-tokens"),
    (["generate", *MODEL, "--prompt", "hi", "--max-new-tokens", "0"], "below 1"),
    (["generate", *MODEL, "--prompt", "hi", "--max-new-tokens", "lots"], "not a whole number"),
    (["download"], "--suite"),
    (["demo", "--bogus"], "unrecognized arguments"),
    (["list", "--bogus"], "unrecognized arguments"),
    # run: lengths, tasks, suites
    ([*CORPUS, "--lengths=-4k"], "negative"),
    ([*CORPUS, "--lengths", "0"], "nothing to predict"),
    ([*CORPUS, "--lengths", "1"], "nothing to predict"),
    ([*CORPUS, "--lengths", "abc"], "not a number of tokens"),
    ([*CORPUS, "--lengths", "4k,x"], "not a number of tokens"),
    ([*CORPUS, "--lengths", "4.5k"], "not a number of tokens"),
    ([*CORPUS, "--lengths", ","], "names nothing"),
    ([*RULER, "--lengths", "16"], "leaves no room"),
    ([*RULER, "--lengths", "0"], "leaves no room"),
    (["run", "--suite", "phonebook", "--model", "{MODEL}", "--lengths", "16"], "leaves no room"),
    ([*RUN, "--lengths", "4k"], "drop --lengths"),
    ([*CORPUS, "--lengths", "4k", "--max-length", "1024"], "exceeds --max-length"),
    (["run", "--suite", "table2", "--tasks", ",", "--model", "{MODEL}", "--data-dir", "{DATA}"], "names nothing"),
    (["run", "--suite", "table2", "--tasks", " , ", "--model", "{MODEL}", "--data-dir", "{DATA}"], "names nothing"),
    (["run", "--suite", "table2", "--tasks", "", "--model", "{MODEL}", "--data-dir", "{DATA}"], "names nothing"),
    (["run", "--suite", "table2", "--tasks", "nope", "--model", "{MODEL}", "--data-dir", "{DATA}"], "no task 'nope'"),
    (["run", "--suite", "table2", "--tasks", "piqa,pica", "--model", "{MODEL}", "--data-dir", "{DATA}"], "'pica'"),
    (["run", "--suite", "nope", "--model", "{MODEL}"], "nope"),
    (["run", "--suite", "{BROKEN_SUITE}", "--model", "{MODEL}"], "broken.yaml"),
    (["run", "--suite", "{EMPTY_SUITE}", "--model", "{MODEL}"], "empty.yaml"),
    (["run", "--suite", "{UNKNOWN_KEY_SUITE}", "--model", "{MODEL}"], "bogus"),
    # run: devices and attention backends (checked before the plan)
    ([*RUN, "--device", "cuda"], "no CUDA GPU"),
    ([*RUN, "--device", "cuda:3"], "cuda:3"),
    ([*RUN, "--device", "tpu"], "unknown device 'tpu'"),
    ([*RUN, "--device", "gpu"], "unknown device 'gpu'"),
    ([*RUN, "--device", ""], "unknown device ''"),
    ([*RUN, "--device", "meta"], "not supported"),
    ([*RUN, "--attention", "triton"], "triton attention backend runs on a CUDA GPU"),
    (["inspect", *MODEL, "--attention", "triton"], "runs on a CUDA GPU"),
    ([*RUN, "--attention", "flash"], "unknown attention backend 'flash'"),
    ([*RUN, "--attention", "TORCH"], "unknown attention backend"),
    # run: folders
    ([*RUN, "--out", "{FILE}"], "is a file"),
    ([*RUN, "--out", "{FILE}/sub"], "not a folder the run can write in"),
    ([*RUN, "--out", "/proc/1/out"], "not a folder the run can write in"),
    ([*RUN[:-4], "--data-dir", "{FILE}", "--limit", "2"], "--data-dir"),
    ([*RUN[:-4], "--data-dir", "{EMPTY_FOLDER}", "--limit", "2"], "missing data file"),
    # run: model folders that are not checkpoints (found by the plan, before loading)
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{ROOT}/missing", "--data-dir", "{DATA}"],
     "not a directory"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{FILE}", "--data-dir", "{DATA}"], "not a directory"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "org/absent@v2", "--data-dir", "{DATA}"],
     "hub model org/absent@v2 is not in the Hugging Face cache"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "my name={FILE}", "--data-dir", "{DATA}"],
     "a display name is NAME=REFERENCE"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "x=zoo:rope", "--model", "x=zoo:fox", "--data-dir",
      "{DATA}"], "two models are named 'x'"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{BAD_CONFIG}", "--data-dir", "{DATA}"],
     "config.json is not valid JSON"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{LIST_CONFIG}", "--data-dir", "{DATA}"],
     "not a JSON object"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{BINARY_CONFIG}", "--data-dir", "{DATA}"],
     "not valid JSON"),
    # check: baselines and results that cannot be compared are 2, never 1
    (["check", "{RESULTS}", "--baseline", "{ROOT}/missing.json"], "no baseline file"),
    (["check", "{RESULTS}", "--baseline", "{B_EMPTY_FILE}"], "not JSON"),
    (["check", "{RESULTS}", "--baseline", "{B_NOT_JSON}"], "not JSON"),
    (["check", "{RESULTS}", "--baseline", "{B_BINARY}"], "not JSON"),
    (["check", "{RESULTS}", "--baseline", "{B_EMPTY_LIST}"], "holds no records"),
    (["check", "{RESULTS}", "--baseline", "{B_NO_RECORDS}"], "holds no records"),
    (["check", "{RESULTS}", "--baseline", "{B_EMPTY_OBJECT}"], "not a results list"),
    (["check", "{RESULTS}", "--baseline", "{B_A_NUMBER}"], "not a results list"),
    (["check", "{RESULTS}", "--baseline", "{B_EXTRA_KEY}"], "not a results list"),
    (["check", "{RESULTS}", "--baseline", "{B_RECORDS_STRING}"], "not a results list"),
    (["check", "{RESULTS}", "--baseline", "{B_JUNK_RECORDS}"], "not a results list"),
    (["check", "{RESULTS}", "--baseline", "{B_UNKNOWN_KIND}"], "unknown key 'ab'"),
    (["check", "{RESULTS}", "--baseline", "{B_UNKNOWN_METRIC}"], "'acc_nrom' matches no baseline metric"),
    (["check", "{RESULTS}", "--baseline", "{B_UNKNOWN_TASK_METRIC}"], "'piqa/accc'"),
    (["check", "{RESULTS}", "--baseline", "{B_STRING_TOLERANCE}"], "acc.abs = '0.01' is not a number"),
    (["check", "{RESULTS}", "--baseline", "{B_NEGATIVE_TOLERANCE}"], "acc.rel = -1"),
    (["check", "{RESULTS}", "--baseline", "{B_BOOL_TOLERANCE}"], "acc.abs = True"),
    (["check", "{RESULTS}", "--baseline", "{B_NULL_TOLERANCE}"], "acc.abs = None"),
    (["check", "{RESULTS}", "--baseline", "{B_NUMBER_TOLERANCE}"], "must be an object"),
    (["check", "{RESULTS}", "--baseline", "{B_EMPTY_TOLERANCE}"], "must be an object"),
    (["check", "{RESULTS}", "--baseline", "{B_LIST_TOLERANCES}"], "tolerances must be an object"),
    (["check", "{ROOT}/missing", "--baseline", "{RESULTS}"], "no results file"),
    (["check", "{RESULTS_NOT_JSON}", "--baseline", "{RESULTS}"], "not a path-eval results file"),
    (["check", "{RESULTS}", "--baseline", "{RESULTS}", "--allow-difference", "gpu"], "'gpu' names no difference"),
    # report and compare
    (["report", "{ROOT}/missing"], "no results file"),
    (["report", "{NO_RESULTS_DIR}"], "no results file"),
    (["report", "{RESULTS_NOT_JSON}"], "not a path-eval results file"),
    (["report", "{RESULTS_EMPTY}"], "hold no records"),
    (["compare", "{ROOT}/missing"], "no results file"),
    (["compare", "{RESULTS_NOT_JSON}", "{RESULTS}"], "not a path-eval results file"),
    # list
    (["list", "--models", "{ROOT}/missing"], "no such folder"),
    (["list", "--models", "{FILE}"], "no such folder"),
    (["list", "--models", "{MODELS}"], "broken/config.json is not valid JSON"),
    # download: everything checked before the network is used
    (["download", "--suite", "nope"], "nope"),
    (["download"], "download needs --suite NAME"),
    (["download", "--model", "{FILE}"], "give a hub id org/name or org/name@revision"),
    (["download", "--suite", "table2", "--tasks", ","], "names nothing"),
    (["download", "--suite", "table2", "--tasks", "nope"], "no task 'nope'"),
    (["download", "--suite", "ruler", "--lengths", "x"], "not a number of tokens"),
    (["download", "--suite", "table2", "--data-dir", "{FILE}"], "--data-dir"),
    (["download", "--suite", "ruler", "--tasks", "niah_single_2", "--essays-wheel", "{ROOT}/missing.whl"],
     "is not a file"),
    (["download", "--suite", "ruler", "--tasks", "niah_single_2", "--essays-wheel", "{NOT_A_WHEEL}"],
     "not a wheel"),
    # inspect and generate: devices before loading
    (["inspect", *MODEL, "--device", "cuda"], "no CUDA GPU"),
    (["inspect", *MODEL, "--device", "npu"], "unknown device"),
    (["inspect", *MODEL, "--attention", "flash"], "unknown attention backend"),
    (["generate", *MODEL, "--prompt", "hi", "--device", "cuda"], "no CUDA GPU"),
    (["inspect", "--model", "{ROOT}/missing"], "not a directory"),
    (["inspect", "--model", "{NO_CONFIG}"], "no config.json"),
    (["inspect", "--model", "{UNKNOWN_TYPE}"], "unknown model_type"),
    (["inspect", "--model", "{NO_WEIGHTS}"], "no weights"),
    (["inspect", "--model", "{BAD_INDEX}"], "no weight_map"),
    (["inspect", *MODEL, "--dtype", "float8"], "unknown dtype"),
    # files that fail to parse, found as they are read (a model load, or the plan's data check)
    (["inspect", "--model", "{TRUNCATED}"], "model.safetensors cannot be read as weights"),
    (["inspect", "--model", "{RANDOM_BYTES}"], "model.safetensors cannot be read as weights"),
    (["inspect", "--model", "{EMPTY_WEIGHTS}"], "model.safetensors cannot be read as weights"),
    (["generate", "--model", "{TRUNCATED}", "--prompt", "hi"], "truncated or corrupt"),
    (["inspect", "--model", "{BAD_TOKENIZER}"], "tokenizer"),
    (["run", "--suite", "table2", "--tasks", "hellaswag", "--model", "{MODEL}", "--data-dir", "{CORRUPT_DATA}"],
     "validation.jsonl line 4 is not JSON"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{TRUNCATED}", "--data-dir", "{DATA}", "--limit", "1"],
     "cannot be read as weights"),
    (["run", "--suite", "table2", "--tasks", "piqa", "--model", "{BAD_TOKENIZER}", "--data-dir", "{DATA}",
      "--limit", "1"], "tokenizer"),
]


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_DATASETS_CACHE")


def _expand(arguments: list[str], paths: dict) -> list[str]:
    expanded = []
    for argument in arguments:
        for name, path in sorted(paths.items(), key=lambda item: -len(item[0])):
            argument = argument.replace("{" + name + "}", str(path))
        expanded.append(argument)
    return expanded


def _main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse
        return stop.code


def left_behind(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name == "results.json" or p.name.endswith(".partial")]


def assert_one_error_line(stderr: str, fragment: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    [line] = lines
    assert line.startswith("error: ") and fragment in line, line
    assert any(word in line.lower() for word in FIX_WORDS), f"names no fix: {line}"
    return line


@pytest.mark.parametrize("arguments, fragment", CASES, ids=[" ".join(c[0])[:80] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(arguments, fragment, place, tmp_path, capsys, monkeypatch):
    if any(a.startswith("cuda") for a in arguments) and torch.cuda.is_available():
        pytest.skip("a CUDA device is bad input only on a machine without one")
    monkeypatch.chdir(tmp_path)  # a default --out (runs/...) lands here
    for name in OFFLINE_VARIABLES:  # main sets them; restored after the test
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # as on a user's CPU machine
    argv = _expand(arguments, place)
    if argv[0] == "run" and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    code = _main(argv)
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.out
    assert_one_error_line(captured.err, _expand([fragment], place)[0])
    assert not left_behind(tmp_path) and not left_behind(place["ROOT"])


def test_the_battery_is_large_enough():
    assert len(CASES) >= 90


def test_debug_shows_the_traceback(place, tmp_path):
    from path_eval.errors import PathEvalError

    with pytest.raises(PathEvalError, match="cannot be read as weights"):
        main(["inspect", "--model", str(place["TRUNCATED"]), "--debug"])


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(place, tmp_path, capsys, monkeypatch):
    """ENOSPC while writing the run folder's first file: one line, exit 2, its staging file removed."""
    from path_eval import atomic_files

    class FullDisk:
        """A staging file on a disk that fills halfway through the first write."""

        def __init__(self, path, *args, **kwargs):
            self.path, self.handle = path, open(path, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            self.handle.write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))

    monkeypatch.setattr(atomic_files, "open", FullDisk, raising=False)
    out = tmp_path / "out"
    code = main(_expand(RUN, place) + ["--out", str(out)])
    line = assert_one_error_line(capsys.readouterr().err, "no space left on the disk")
    assert code == 2 and "plan.json.partial" in line
    assert not [p for p in out.rglob("*") if p.is_file()]
