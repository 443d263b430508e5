"""A third battery of hostile inputs (issue 46), each class with members the earlier batteries do not
hold: per-sample logs with a sample added, deleted or repeated; results and baselines holding
values no metric can take; models whose numbers are NaN, or whose config.json sizes no memory
holds; data files that are no files, or lines no row is; a cache folder that is relative, empty or
unwritable; names and files that would write control characters to the terminal; and the inputs
that used to end in a traceback or an unclear line. Each gives exit 2 and one `error:` line that
names the fix, and writes nothing."""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from path_eval.cli import main
from tests.cli.test_bad_inputs import OFFLINE_VARIABLES, assert_one_error_line
from tests.cli.test_fresh_battery import copy_with_config, refused_in_one_line
from tests.helpers import fixture_data, records

ZOO = Path(__file__).parents[2] / "path_eval" / "zoo" / "models"
LOG = "samples/rope/phonebook_1024_s1234.jsonl"
SAMPLES = 3


def copy_with_log(run: Path, target: Path, change) -> Path:
    """The run folder copied, its phonebook log's lines passed through `change` (list -> list)."""
    shutil.copytree(run, target)
    log = target / LOG
    log.write_text("".join(change(log.read_text().splitlines(keepends=True))))
    return target


def results_with(folder: Path, name: str, **changes) -> Path:
    """A results.json of helpers.records() whose first record's fields are replaced (raw JSON)."""
    rows = [json.loads(r.model_dump_json()) for r in records()]
    rows[0] |= changes
    file = folder / f"{name}.json"
    file.write_text(json.dumps(rows))
    return file


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """Everything the cases point at, made once: {NAME} in a case's arguments is replaced by its path."""
    root = tmp_path_factory.mktemp("integrity-battery")
    paths = {"ROOT": root}
    run = root / "phonebook-run"
    assert main(["run", "--suite", "ci", "--tasks", "phonebook", "--lengths", "1k", "--limit", str(SAMPLES),
                 "--model", "zoo:rope", "--out", str(run), "--quiet"]) == 0
    paths["RUN"] = run
    logs = {
        "DUPLICATED": lambda lines: lines + lines[:1],
        "DELETED": lambda lines: lines[:1] + lines[2:],
        "ADDED": lambda lines: lines + [json.dumps(json.loads(lines[0]) | {"doc_id": SAMPLES}) + "\n"],
        "RENUMBERED": lambda lines: [json.dumps(json.loads(lines[0]) | {"doc_id": 7}) + "\n"] + lines[1:],
        "TEXT_ID": lambda lines: [json.dumps(json.loads(lines[0]) | {"doc_id": "0"}) + "\n"] + lines[1:],
    }
    for name, change in logs.items():
        paths[f"R_{name}"] = copy_with_log(run, root / f"run-{name.lower()}", change)
    # the records' n, from results.json: a log whose every id is distinct, one sample short of it
    short = copy_with_log(run, root / "run-n-short", lambda lines: lines)
    stored = json.loads((short / "results.json").read_text())
    (short / "results.json").write_text(json.dumps([r | {"n": r["n"] + 1} for r in stored]))
    paths["R_N_SHORT"] = short

    values = root / "values"
    values.mkdir()
    paths["BASELINE"] = results_with(values, "baseline")
    for name, value in {"TRUE": True, "TEXT": "0.5", "ABOVE_ONE": 1.5, "NEGATIVE": -0.1, "NAN": "NaN",
                        "INF": "Infinity", "MINUS_INF": "-Infinity", "NULL": None}.items():
        paths[f"V_{name}"] = results_with(values, name.lower(), value=value)
    rows = [json.loads(r.model_dump_json()) for r in records()]
    rows[1]["value"] = 0.5  # a word perplexity below 1
    (values / "ppl_below_one.json").write_text(json.dumps(rows))
    paths["V_PPL_BELOW_ONE"] = values / "ppl_below_one.json"

    llama, path = ZOO / "flipflop_rope", ZOO / "flipflop_path"
    configs = {
        "L_EPS_NAN": (llama, {"rms_norm_eps": math.nan}), "L_EPS_NEGATIVE": (llama, {"rms_norm_eps": -1e-6}),
        "L_THETA_NEGATIVE": (llama, {"rope_parameters": {"rope_theta": -10000.0, "rope_type": "default"}}),
        "L_THETA_ZERO": (llama, {"rope_theta": 0}), "L_EPS_TEXT": (llama, {"rms_norm_eps": "1e-6"}),
        "O_EPS_INF": (path, {"norm_eps": math.inf}), "O_THETA_NAN": (path, {"rope_theta": math.nan}),
        "L_LAYERS_MILLION": (llama, {"num_hidden_layers": 10**6}),
        "L_VOCAB_HUGE": (llama, {"vocab_size": 10**12}),
        "O_LAYERS_MILLION": (path, {"num_hidden_layers": 10**6}),
        "O_HIDDEN_HUGE": (path, {"hidden_size": 2**20, "num_heads": 2**10}),
    }
    for name, (source, changes) in configs.items():
        copy_with_config(source, root / name.lower(), **changes)
        paths[name] = root / name.lower()

    for name, make in {"FIFO": lambda f: os.mkfifo(f), "ZERO": lambda f: f.symlink_to("/dev/zero")}.items():
        data = fixture_data(root / f"data-{name.lower()}", "piqa")
        [jsonl] = data.rglob("*.jsonl")
        jsonl.unlink()
        make(jsonl)
        paths[f"D_{name}"] = data

    suites = root / "suites"
    suites.mkdir()
    bomb = ["name: bomb", "description: x", "a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    (suites / "bomb.yaml").write_text("\n".join(bomb + ["tasks: *a8"]) + "\n")
    paths["S_BOMB"] = suites / "bomb.yaml"
    escape = {"name": "escape", "description": "x", "tasks": [{"name": "ff\x1b[2J", "flipflop": {"p_ignore": 0.8},
                                                                "lengths": [8], "samples": 2,
                                                                "metrics": ["flipflop_error"]}]}
    (suites / "escape.yaml").write_text(json.dumps(escape))
    paths["S_ESCAPE"] = suites / "escape.yaml"
    undecodable = root / os.fsdecode(b"model-\xff")
    shutil.copytree(llama, undecodable)
    paths["M_UNDECODABLE"] = undecodable
    return paths


RESCORE_FIX = "give the samples/ folder the run wrote"
CHECK = ["check", "--baseline", "{BASELINE}"]
CONFIG = "config.json does not describe a model it can build"
WEIGHTS = "weights alone need at least"
PIQA = ["run", "--suite", "table2", "--tasks", "piqa", "--model", "zoo:rope", "--limit", "2", "--data-dir"]

# (arguments, fragments the error line must hold); every case exits 2 and writes nothing.
CASES = [
    # per-sample logs that are not the run's: each expected sample exactly once
    (["rescore", "{R_DUPLICATED}"], ["holds sample 0 twice", RESCORE_FIX]),
    (["rescore", "{R_DELETED}"], [f"holds 2 samples where the plan made {SAMPLES} (sample 1 is missing)"]),
    (["rescore", "{R_ADDED}"], [f"holds 4 samples where the plan made {SAMPLES}", RESCORE_FIX]),
    (["rescore", "{R_RENUMBERED}"], ["(sample 0 is missing)", RESCORE_FIX]),
    (["rescore", "{R_TEXT_ID}"], ["doc_id is \"0\", not a whole number", RESCORE_FIX]),
    (["rescore", "{R_N_SHORT}"], [f"hold {SAMPLES} samples where the run recorded {SAMPLES + 1}", RESCORE_FIX]),
    # values no metric can take, in the results and in the baseline alike
    ([*CHECK, "{V_TRUE}"], ["0.value", "True is not a number"]),
    ([*CHECK, "{V_TEXT}"], ["0.value", "'0.5' is not a number"]),
    ([*CHECK, "{V_NULL}"], ["0.value"]),
    ([*CHECK, "{V_ABOVE_ONE}"], ["the results hold an impossible value: m piqa acc = 1.5 is outside 0..1"]),
    ([*CHECK, "{V_NEGATIVE}"], ["m piqa acc = -0.1 is outside 0..1"]),
    ([*CHECK, "{V_NAN}"], ["m piqa acc = nan is not a finite number"]),
    ([*CHECK, "{V_INF}"], ["m piqa acc = inf is not a finite number"]),
    ([*CHECK, "{V_MINUS_INF}"], ["m piqa acc = -inf is not a finite number"]),
    ([*CHECK, "{V_PPL_BELOW_ONE}"], ["word_perplexity = 0.5 is outside 1..inf, where a word_perplexity lies"]),
    (["check", "{BASELINE}", "--baseline", "{V_NAN}"], ["the baseline hold an impossible value: m piqa acc = nan"]),
    (["check", "{BASELINE}", "--baseline", "{V_ABOVE_ONE}"], ["the baseline hold an impossible value"]),
    (["check", "{BASELINE}", "--baseline", "{V_TRUE}"], ["True is not a number"]),
    # config.json constants that give NaN logits, refused as config.json is read
    (["inspect", "--model", "{L_EPS_NAN}"], [CONFIG, "rms_norm_eps is nan, not a finite number of at least 0"]),
    (["inspect", "--model", "{L_EPS_NEGATIVE}"], [CONFIG, "rms_norm_eps is -1e-06"]),
    (["inspect", "--model", "{L_THETA_NEGATIVE}"], [CONFIG, "rope_theta is -10000.0, not a finite number above 0"]),
    (["inspect", "--model", "{L_THETA_ZERO}"], [CONFIG, "rope_theta is 0"]),
    (["inspect", "--model", "{L_EPS_TEXT}"], [CONFIG, "rms_norm_eps is '1e-6'"]),
    (["inspect", "--model", "{O_EPS_INF}"], [CONFIG, "norm_eps is inf"]),
    (["inspect", "--model", "{O_THETA_NAN}"], [CONFIG, "rope_theta is nan"]),
    (["generate", "--model", "{L_EPS_NAN}", "--prompt", "a"], [CONFIG, "rms_norm_eps is nan"]),
    # config.json sizes no memory holds, refused before anything is allocated
    (["inspect", "--model", "{L_LAYERS_MILLION}"], [WEIGHTS]),
    (["inspect", "--model", "{L_VOCAB_HUGE}"], [WEIGHTS]),
    (["inspect", "--model", "{O_LAYERS_MILLION}"], [WEIGHTS]),
    (["inspect", "--model", "{O_HIDDEN_HUGE}"], [WEIGHTS]),
    (["generate", "--model", "{L_LAYERS_MILLION}", "--prompt", "a"], [WEIGHTS]),
    (["run", "--suite", "ci", "--tasks", "flipflop_in", "--model", "flipflop_rope={L_LAYERS_MILLION}"], [WEIGHTS]),
    # data files that are no files
    ([*PIQA, "{D_FIFO}"], ["is a FIFO, not a data file", "download"]),
    ([*PIQA, "{D_ZERO}"], ["(a link to /dev/zero) is a device, not a data file"]),
    # the inputs that ended in a traceback or an unclear line
    (["inspect", "--model", ""], ["--model '' names no model", "zoo:NAME"]),
    (["run", "--suite", "ci", "--model", "x="], ["--model 'x='"]),
    (["generate", "--model", " ", "--prompt", "a"], ["--model ' ' names no model"]),
    (["inspect", "--model", "{M_UNDECODABLE}"], ["has a path that is not UTF-8 text", "rename the folder"]),
    (["run", "--suite", "{S_BOMB}", "--model", "zoo:rope"], ["YAML aliases", "alias bomb"]),
    (["run", "--suite", "{S_ESCAPE}", "--model", "zoo:rope"], ["task name 'ff\\x1b[2J'"]),
]


@pytest.mark.parametrize("arguments, fragments", CASES, ids=[" ".join(c[0])[:80] for c in CASES])
def test_hostile_input_is_one_line_and_writes_nothing(arguments, fragments, place, tmp_path, capsys, monkeypatch):
    refused_in_one_line(arguments, fragments, place, tmp_path, capsys, monkeypatch)


def test_the_battery_is_large_enough():
    assert len(CASES) >= 40


def test_the_inputs_without_the_fault_are_accepted(place, capsys):
    """The cases' controls: the run's own logs rescore, its own results check clean against
    themselves, and the fixture's records are within their metrics' bounds."""
    from path_eval.reports.check import check, load_baseline
    from path_eval.results import load_records
    from path_eval.results.rescore import rescore

    rescored, _ = rescore(place["RUN"])
    assert [(r.task, r.n) for r in rescored] == [("phonebook", SAMPLES)]
    baseline, _ = load_baseline(place["BASELINE"])
    findings, problems, _ = check(load_records(place["BASELINE"]), baseline, {})
    assert not problems and not any(f.regressed for f in findings)
    assert main(["check", str(place["BASELINE"]), "--baseline", str(place["BASELINE"])]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("metric, inside, outside", [("acc", [0, 0.5, 1], [-1e-9, 1.0001]),
                                                      ("flipflop_error", [0, 1], [1.5]),
                                                      ("perplexity", [1, 1e30], [0.999, 0]),
                                                      ("bits_per_byte", [0, 3.2], [-0.1]),
                                                      ("not_registered", [-5, 1e9], [])])
def test_the_bounds_follow_the_registry(metric, inside, outside):
    """A fraction shown x100 lies in 0..1, a perplexity is at least 1 (exp of a mean NLL >= 0), bits
    per byte at least 0; a metric the registry lacks is only asked to be finite."""
    from path_eval.metrics.registry import impossible_value

    assert [impossible_value(metric, v) for v in inside] == [None] * len(inside)
    assert all(impossible_value(metric, v) for v in [*outside, math.nan, math.inf, -math.inf, True, "1"])


def test_a_model_with_nan_weights_stops_the_run_naming_it(place, tmp_path, capsys):
    """Every weight NaN: the forward's logits are all NaN; the run stops in one line naming the model
    (it used to score each empty generation 0.0, exit 0), and writes no results."""
    import torch
    from safetensors.torch import load_file, save_file

    model = tmp_path / "nan-model"
    shutil.copytree(ZOO / "rope", model)
    state = load_file(model / "model.safetensors")
    save_file({k: torch.full_like(v, math.nan) for k, v in state.items()}, model / "model.safetensors",
              metadata={"format": "pt"})
    for task in ("phonebook", "heldout"):  # a generation, a perplexity
        out = tmp_path / f"run-{task}"
        code = main(["run", "--suite", "ci", "--tasks", task, "--lengths", "1k", "--limit", "1", "--model",
                     f"rope={model}", "--out", str(out), "--quiet"])
        errors = [line for line in capsys.readouterr().err.splitlines() if "it/s]" not in line]  # lm-eval's bars
        line = assert_one_error_line("\n".join(errors), f"model {model} gives NaN logits")
        assert code == 2 and "check the checkpoint's weights" in line
        assert not (out / "results.json").exists()


def test_a_data_line_longer_than_any_row_is_refused_before_it_is_read_whole(tmp_path, monkeypatch):
    from path_eval.data import layout
    from path_eval.errors import PathEvalError

    monkeypatch.setattr(layout, "MAX_LINE_BYTES", 1000)
    file = tmp_path / "train.jsonl"
    file.write_text('{"a": 1}\n' + json.dumps({"text": "x" * 1001}) + "\n")
    with pytest.raises(PathEvalError, match="line 2 is longer than"):
        layout.check_jsonl(file, "python eval.py download")
    file.write_text('{"a": 1}\n' + json.dumps({"text": "x" * 900}) + "\n")
    layout.check_jsonl(file, "python eval.py download")


@pytest.mark.parametrize("environment, fragment", [
    ({"PATH_EVAL_CACHE": ""}, "PATH_EVAL_CACHE='' is not an absolute folder"),
    ({"PATH_EVAL_CACHE": "relative/cache"}, "PATH_EVAL_CACHE='relative/cache' is not an absolute folder"),
    ({"HOME": ""}, "HOME='' is not an absolute folder"),
    ({"HOME": "home"}, "HOME='home' is not an absolute folder"),
    ({"PATH_EVAL_CACHE": "{FILE}"}, "is not a folder path-eval can write in"),
])
def test_a_cache_folder_that_is_not_absolute_and_writable_is_refused(environment, fragment, tmp_path, capsys,
                                                                     monkeypatch):
    """The cache was made at /.cache (HOME empty) or in the working folder (PATH_EVAL_CACHE empty)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    monkeypatch.delenv("PATH_EVAL_CACHE", raising=False)
    for name in OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value.replace("{FILE}", str(tmp_path / "a-file")))
    code = main(["run", "--suite", "ci", "--tasks", "flipflop_in", "--model", "zoo:flipflop_rope", "--limit", "1",
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert_one_error_line(capsys.readouterr().err, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_staging_files_of_a_killed_process_are_cleared_from_the_cache(tmp_path, monkeypatch):
    """A kill at a frozen set's rename leaves its staging file; the next run removes it (a live
    process's own is kept: it may still be renamed into place)."""
    from path_eval.atomic_files import check_cache_folder, staging_prefix

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    frozen = tmp_path / "cache" / "frozen" / "phonebook"
    frozen.mkdir(parents=True)
    dead = frozen / f"{staging_prefix()}{ended.stdout.strip()}.1024-abc.jsonl.partial"
    alive = frozen / f"{staging_prefix()}{os.getpid()}.1024-def.jsonl.partial"
    kept = frozen / "1024-abc.jsonl"
    for file in (dead, alive, kept):
        file.write_text("{}\n")
    assert check_cache_folder() == tmp_path / "cache"
    assert sorted(p.name for p in frozen.iterdir()) == sorted([alive.name, kept.name])


def test_nothing_printed_passes_control_characters_through(tmp_path, capsys):
    """A suite's description, a model's and a task's names, as results.json holds them, reach the
    terminal escaped in every report format; rich markup in a name is shown as written."""
    from path_eval.results import write_results

    hostile = [r.model_copy(update={"model": "m\x1b]0;owned\x07[red]x", "task": "piqa\x1b[2J\u202e"})
               for r in records()]
    write_results(hostile, tmp_path / "run" / "results.json")
    for fmt in ("terminal", "markdown", "csv"):
        assert main(["report", str(tmp_path / "run"), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "m\\x1b]0;owned\\x07[red]x" in out.replace("\n", "")
    assert main(["compare", str(tmp_path / "run"), str(tmp_path / "run")]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_the_printable_text_and_the_error_line():
    from path_eval.terminal import ERROR_LINE_LIMIT, error_line, printable

    assert printable("plain é 中 text\twith tab\n") == "plain é 中 text\twith tab\n"
    assert printable("a\x1b[31mb\x07c\x9bd\u202ee\ud800") == "a\\x1b[31mb\\x07c\\x9bd\\u202ee\\ud800"
    assert error_line("one\ntwo\r\nthree\rfour") == "error: one\\ntwo\\nthree\\x0dfour"
    assert printable("a,b\r\nc,d\r\n") == "a,b\r\nc,d\r\n"  # CSV's own line ends
    long = error_line("problem " + "x" * 10**6 + " fix: give another file")
    assert len(long) < ERROR_LINE_LIMIT + 80 and long.startswith("error: problem xxx")
    assert long.endswith("fix: give another file") and "characters left out" in long


def test_a_closed_stdout_ends_quietly():
    """`eval.py list | head -c1`: the reader left; the command stops without a word and with the
    status of a process SIGPIPE ended, as Unix tools do (it printed "Broken pipe:: check the path").
    Here the reader has left before the first write."""
    read, write = os.pipe()
    os.close(read)
    command = [sys.executable, str(Path(__file__).parents[2] / "eval.py"), "list"]
    try:
        writer = subprocess.run(command, stdout=write, stderr=subprocess.PIPE, text=True,
                                env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])})
    finally:
        os.close(write)
    assert writer.stderr == "" and writer.returncode == 128 + 13


def test_a_full_disk_under_the_cache_names_the_cache(tmp_path, monkeypatch):
    """ENOSPC writing a frozen set: the fix moves the cache, not the run folder."""
    import errno

    from path_eval.cli import os_error_line

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    staging = tmp_path / "cache" / "frozen" / "phonebook" / ".host-1.1024-abc.jsonl.partial"
    line = os_error_line(OSError(errno.ENOSPC, "No space left on device", str(staging)))
    assert line.startswith(f"no space left on the disk writing {staging}") and "PATH_EVAL_CACHE on another" in line
    line = os_error_line(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "run" / "plan.json")))
    assert "--out on another disk" in line


def test_poisoned_cache_files_are_rebuilt_not_trusted(tmp_path, monkeypatch):
    """The weight-hash memo and lm-eval's task index written over by another program (a list, a
    number where a hash or a path belongs): each is made again, never a traceback."""
    import lm_eval.tasks

    from path_eval.data import file_sha256
    from path_eval.models.identity import weights_sha256
    from path_eval.tasks import lm_eval_tasks

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    fresh = weights_sha256([weights])
    assert fresh == hashlib.sha256(f"w.bin:{file_sha256(weights)}\n".encode()).hexdigest()
    memo = tmp_path / "cache" / "weight-hashes.json"
    for poison in ("[1, 2]", '{"%s": [5]}' % next(iter(json.loads(memo.read_text()))), "\xff"):
        memo.write_text(poison)
        assert weights_sha256([weights]) == fresh

    class Entry:
        yaml_path = weights  # an existing file stands for a task's YAML

    class FewTasks:
        task_index = {"piqa": Entry()}

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", FewTasks)
    index_of = lm_eval_tasks.task_yaml_paths.__wrapped__  # the function, not the process's memo of it
    assert index_of() == {"piqa": str(weights)}
    [index] = (tmp_path / "cache" / "lm_eval_index").iterdir()
    for poison in ("[1]", '{"piqa": 5}', "7"):
        index.write_text(poison)
        assert index_of() == {"piqa": str(weights)}


LOAD_NEVER_ENDS = """
import sys, threading
from pathlib import Path
import path_eval.models.loading as loading

def load_network(path, **options):  # a load that never ends: a checkpoint too large to read in a day
    Path(sys.argv[1]).write_text("loading")
    threading.Event().wait()

loading.load_network = load_network
from path_eval.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("signum", [2, 15], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_model_loads_ends_the_command(tmp_path, signum):
    """The model loads in a thread while the samples freeze; a signal used to wait for the load to
    end (the run settled it, and the interpreter joins its threads at exit): minutes for a large
    checkpoint, a SIGTERM seemingly ignored. Here the load never ends, and the command still stops in
    one line with the signal's status."""
    import signal
    import time

    marker = tmp_path / "loading"
    script = tmp_path / "run.py"
    script.write_text(LOAD_NEVER_ENDS)
    process = subprocess.Popen([sys.executable, str(script), str(marker), "run", "--suite", "ci", "--tasks",
                                "flipflop_in", "--model", "zoo:flipflop_rope", "--limit", "1", "--out",
                                str(tmp_path / "out"), "--quiet"], cwd=Path(__file__).parents[2],
                               stderr=subprocess.PIPE, text=True,
                               env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])})
    while not marker.exists() and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signum)
    try:
        _, stderr = process.communicate(timeout=300)  # a hang detector, not a measurement
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the command waited for a load that never ends")
    assert process.returncode == 128 + signum, stderr
    assert [line for line in stderr.splitlines() if line.startswith("error:")] == \
        [f"error: interrupted by {signal.Signals(signum).name}: 0 finished requests, batches and blocks are saved in {tmp_path / 'out'}; "
         "the same command resumes there"]
    assert "Traceback" not in stderr and not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("pattern, group", [("(a+)+$", "(a+)+"), ("x((ab)+c)*", "((ab)+c)*"), ("(y|a{2,})+", "(y|a{2,})+"),
                                            ("(\\s*\\S)*", "(\\s*\\S)*")])
def test_a_tokenizer_whose_regex_backtracks_is_refused_before_it_tokenizes(pattern, group, tmp_path, capsys):
    """tokenizers' Oniguruma backtracks on a repeated repetition until its retry limit, then panics
    with a Rust backtrace (`(a+)+$` on 24 `a`s and a `!`). The checkpoint is refused as its
    tokenizer loads, in one line naming the pattern."""
    model = tmp_path / "model"
    shutil.copytree(ZOO / "flipflop_rope", model)
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        tokenizer["pre_tokenizer"]]}
    (model / "tokenizer.json").write_text(json.dumps(tokenizer))
    assert main(["inspect", "--model", str(model)]) == 2
    line = assert_one_error_line(capsys.readouterr().err, f"whose group {group!r} repeats a repetition")
    assert "exponential time" in line


def test_the_tokenizers_patterns_in_use_pass_the_backtracking_check():
    """The controls: GPT-2's and Llama 3's splitting patterns, and every shipped tokenizer."""
    from path_eval.models.tokenizer import nested_repetition, refuse_backtracking_patterns

    gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
    llama3 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
              "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
    for pattern in (gpt2, llama3, "(ab)+", "(a+)?", "(a+){1,3}", "[(a+)]+", "\\(a+\\)+", "[]a+]+"):
        assert nested_repetition(pattern) is None, pattern
    for tokenizer in ZOO.glob("*/tokenizer.json"):
        refuse_backtracking_patterns(tokenizer)
