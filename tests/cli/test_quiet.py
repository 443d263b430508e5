"""`--quiet` prints no third-party warnings: a run of an fla-format zoo model (whose config type
transformers does not know) outside a git checkout (where lm-eval's `git describe` fails) prints
nothing on stderr but the run's own lines, and no line of transformers', lm-eval's or git's."""
import os
import re
import subprocess
import sys

from tests.helpers import ROOT

THIRD_PARTY = re.compile(r"warn|fatal|\[transformers\]|not a git repository", re.IGNORECASE)
# lm-eval's info lines and its tqdm bars (which end in a rate, "3215.67it/s]")
LM_EVAL_CHATTER = re.compile(r"Selected tasks|Building contexts|Using gen_kwargs|Setting random seed|"
                             r"Saving results|Using pre-initialized model|it/s\]")


def test_a_quiet_run_prints_no_third_party_warnings(tmp_path):
    env = dict(os.environ, PATH_EVAL_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    env.pop("GIT_DIR", None)
    # a user's fresh shell: the harness chooses the thread count (and says so), and nothing an earlier
    # in-process test's --quiet left in this worker's environment (TQDM_DISABLE, ...) leaks in
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TQDM_DISABLE", "PATH_EVAL_PROGRESS", "TRANSFORMERS_VERBOSITY",
                 "DATASETS_VERBOSITY"):
        env.pop(name, None)
    command = [sys.executable, str(ROOT / "eval.py"), "run", "--suite", "ci", "--model", "zoo:fox", "--tasks",
               "niah_single_1", "--lengths", "1k", "--limit", "1", "--out", str(tmp_path / "out")]
    run = subprocess.run([*command, "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    noise = [line for line in (run.stdout + run.stderr).splitlines() if THIRD_PARTY.search(line)]
    assert not noise, noise
    assert run.stderr == ""  # the table goes to stdout; a quiet fresh run has nothing to say on stderr
    # the same run without --quiet still leaves git's and the config-type noise out: they say nothing
    loud = subprocess.run(command + ["--out", str(tmp_path / "loud")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert loud.returncode == 0, loud.stderr[-3000:]
    assert "not a git repository" not in loud.stderr and "to instantiate a model of type" not in loud.stderr
    # nor lm-eval's info lines and tqdm bars: the run's own lines and bars only, unless --verbose
    assert not [line for line in loud.stderr.splitlines() if LM_EVAL_CHATTER.search(line)], loud.stderr
    own = loud.stderr.splitlines()
    assert any(line.startswith("CPU threads: ") for line in own) and any(line.startswith("fox: ") for line in own)
    verbose = subprocess.run(command + ["--out", str(tmp_path / "verbose"), "--verbose"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    assert {"Selected tasks:", "Building contexts for niah_single_1_1024_s1234 on rank 0..."} <= \
        set(verbose.stderr.splitlines())
    assert "it/s]" in verbose.stderr  # lm-eval's tqdm bar


def test_quiet_silences_datasets_bars_imported_before_it(monkeypatch):
    """The Python API and tests call the CLI in a process that imported datasets already: datasets read
    its progress-bar setting from the environment then, so --quiet turns its bars off itself (a cold
    cache's "Generating test split" bars were a second stderr line beside a run's one error line)."""
    import datasets

    from path_eval.cli import parse_and_configure

    for name in ("TQDM_DISABLE", "PATH_EVAL_PROGRESS", "TRANSFORMERS_VERBOSITY", "DATASETS_VERBOSITY"):
        monkeypatch.setenv(name, os.environ.get(name, ""))  # restored after the test
    datasets.enable_progress_bars()
    try:
        parse_and_configure(["run", "--suite", "ci", "--model", "zoo:fox", "--quiet"])
        assert not datasets.is_progress_bar_enabled()
    finally:
        datasets.enable_progress_bars()
