"""Names are never paths, and two names never share a file: every name a user chooses that becomes a
file or folder name (a suite's, a task's, a model's display name, a length bucket's label) is refused
in one line when it would be a path, two that would share a file are refused naming both, and all
before anything runs; a run never writes through a symbolic link in its folder, and clears the
staging files a killed run left there. Each class is tried with several members, in-process like
tests/cli/test_bad_inputs.py, and nothing may appear outside the run folder."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from path_eval.cli import main
from path_eval.errors import PathEvalError
from path_eval.plan.models import DISPLAY_NAME
from tests.cli.test_bad_inputs import OFFLINE_VARIABLES, assert_one_error_line, left_behind

# A flip-flop task reads no data: the plan of a suite of them needs only a model.
FLIPFLOP = {"flipflop": {"p_ignore": 0.8}, "lengths": [8], "samples": 2, "metrics": ["flipflop_error"]}
MODEL = "zoo:flipflop_rope"


def suite_file(folder: Path, name: str = "names", tasks: list[dict] | None = None, **extra) -> Path:
    """A suite YAML (JSON is YAML) of flip-flop tasks, written under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    suite = {"name": name, "description": "names", "tasks": tasks or [{"name": "ff", **FLIPFLOP}], **extra}
    file = folder / f"suite-{len(list(folder.iterdir()))}.yaml"
    file.write_text(json.dumps(suite))
    return file


def everything_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """main() run in an empty working folder (a default runs/... lands there); returns (exit code,
    stderr) and checks that nothing was written anywhere under tmp_path but the suites."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in OFFLINE_VARIABLES:  # main sets them; restored after the test
        monkeypatch.delenv(name, raising=False)

    def run(*argv) -> tuple[int, str]:
        before = everything_under(tmp_path)
        try:
            code = main([str(a) for a in argv])
        except SystemExit as stop:
            code = stop.code
        captured = capsys.readouterr()
        assert "Traceback" not in captured.out + captured.err
        if code == 2:
            assert everything_under(tmp_path) == before, "a refused run wrote files"
        return code, captured.err

    return run


def refused(run, fragment: str, *argv) -> str:
    code, err = run(*argv)
    assert code == 2, err
    return assert_one_error_line(err, fragment)


# ---------------------------------------------------------------- names that would be paths

HOSTILE = [
    ("../escape", "holds a path separator"),
    ("../../../tmp/escape", "holds a path separator"),
    ("sub/dir", "holds a path separator"),
    ("back\\slash", "holds a path separator"),
    ("..", "holds '..'"),
    ("a..b", "holds '..'"),
    (".hidden", "starts with '.'"),
    (".", "starts with '.'"),
    ("", "is empty"),
    ("nul\x00byte", "control character U+0000"),
    ("bell\x07", "control character U+0007"),
    ("new\nline", "control character U+000A"),
    ("escape\x1b[31m", "control character U+001B"),
    ("next\x85line", "control character U+0085"),
    ("line\u2028separator", "control character U+2028"),
    ("paragraph\u2029separator", "control character U+2029"),
    ("x" * 400, "longer than 160 bytes"),
    ("é" * 90, "longer than 160 bytes"),  # 180 bytes in UTF-8
]


@pytest.mark.parametrize("name, problem", HOSTILE, ids=[repr(n)[:30] for n, _ in HOSTILE])
def test_a_suite_name_that_would_be_a_path_is_refused(name, problem, cli, tmp_path):
    """Without --out the folder is runs/SUITE-KEY: `../` in the name would leave runs/."""
    line = refused(cli, problem, "run", "--suite", suite_file(tmp_path / "suites", name), "--model", MODEL)
    assert "suite name" in line and "\n" not in line.strip()


@pytest.mark.parametrize("name, problem", HOSTILE, ids=[repr(n)[:30] for n, _ in HOSTILE])
def test_a_task_name_that_would_be_a_path_is_refused(name, problem, cli, tmp_path):
    suite = suite_file(tmp_path / "suites", tasks=[{"name": "ok", **FLIPFLOP}, {"name": name, **FLIPFLOP}])
    line = refused(cli, problem, "run", "--suite", suite, "--model", MODEL, "--out", tmp_path / "work" / "out")
    assert "task name" in line


@pytest.mark.parametrize("name, problem", [case for case in HOSTILE if DISPLAY_NAME.fullmatch(case[0])],
                         ids=lambda value: repr(value)[:30])
def test_a_display_name_that_would_be_a_path_is_refused(name, problem, cli, tmp_path):
    """NAME= is the model's folder in samples/, curves/, resume/ and lm_eval/ (names with '/', '=' or
    white space, line breaks among it, are refused by the NAME=REFERENCE rule itself)."""
    line = refused(cli, problem, "run", "--suite", suite_file(tmp_path / "suites"), "--model", f"{name}={MODEL}",
                   "--out", tmp_path / "work" / "out")
    assert "display name" in line


@pytest.mark.parametrize("label, problem", [("../up", "path separator"), (".dot", "starts with '.'"),
                                            ("tab\there", "U+0009")])
def test_a_length_bucket_label_that_would_be_a_path_is_refused(label, problem, cli, tmp_path):
    suite = suite_file(tmp_path / "suites", length_buckets={"field": "length", "edges": [4000],
                                                            "labels": ["short", label]})
    line = refused(cli, problem, "run", "--suite", suite, "--model", MODEL, "--out", tmp_path / "work" / "out")
    assert "length bucket label" in line


def test_a_display_name_is_one_line_whatever_it_holds(cli, tmp_path):
    """The existing NAME= check (spaces, '=') names the reference quoted, on one line."""
    refused(cli, "a display name is NAME=REFERENCE", "run", "--suite", suite_file(tmp_path / "suites"),
            "--model", f"two\nlines={MODEL}", "--out", tmp_path / "work" / "out")


@pytest.mark.parametrize("text", [name for name, _ in HOSTILE] + ["org/name", "/abs/path/ckpt", "a+b", "ü", "  "])
def test_slug_is_always_one_safe_file_name(text, tmp_path):
    """What every name that becomes a folder goes through: a single component inside its folder."""
    from path_eval.samples.logs import name_problem, slug

    name = slug(text)
    assert name_problem(name) is None
    assert (tmp_path / name).resolve().parent == tmp_path.resolve()


def test_slug_keeps_the_names_it_always_gave():
    """Run folders made before stay readable (rescore, compare find samples/<slug>)."""
    from path_eval.samples.logs import slug

    assert [slug(n) for n in ("rope", "flipflop_path_fox", "org/name", "a+b", "x.y-z")] == \
        ["rope", "flipflop_path_fox", "org_name", "a_b", "x.y-z"]
    long = slug("/very/long/" + "d" * 300)
    assert len(long) == 160 and long != slug("/very/long/" + "d" * 299)


# ---------------------------------------------------------------- two names, one file

@pytest.mark.parametrize("first, second", [("a+b", "a_b"), ("A", "a"), ("m.", "m._"), ("x y", "x_y"),
                                           ("ü", "ö")])
def test_two_models_that_would_share_a_folder_are_refused_naming_both(first, second, cli, tmp_path):
    """Display names (and default names: folder names, hub ids) whose folders would be one."""
    suite = suite_file(tmp_path / "suites")
    if " " in first:  # a display name holds no space: two folders named so give these default names
        models = []
        for name in (first, second):
            folder = tmp_path / "models" / name
            folder.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(Path(__file__).parents[2] / "path_eval" / "zoo" / "models" / "flipflop_rope", folder)
            models += ["--model", folder]
    else:
        models = ["--model", f"{first}={MODEL}", "--model", f"{second}={MODEL}"]
    line = refused(cli, "would share the file name", "run", "--suite", suite, *models,
                   "--out", tmp_path / "work" / "out")
    assert repr(first) in line and repr(second) in line and "NAME=" in line


@pytest.mark.parametrize("first, second", [("ff", "FF"), ("Case", "cASE")])
def test_two_tasks_whose_logs_would_share_a_file_are_refused_naming_both(first, second, cli, tmp_path):
    """Logs ff@8 and FF@8 are one file where case is ignored (macOS, Windows: a copied run folder)."""
    tasks = [{"name": first, **FLIPFLOP}, {"name": second, **FLIPFLOP}]
    suite = suite_file(tmp_path / "suites", tasks=tasks)
    line = refused(cli, "would share the file name", "run", "--suite", suite, "--model", MODEL,
                   "--out", tmp_path / "work" / "out")
    assert f"{first} ({first}@8)" in line and f"{second} ({second}@8)" in line


def test_names_that_only_look_alike_are_planned(tmp_path):
    """Tasks a and a@8 log as a@8 and a@8@8: distinct files, both run."""
    from path_eval.plan import resolve_plan
    from path_eval.suites import SuiteSpec

    suite = SuiteSpec.model_validate({"name": "alike", "description": "x", "tasks": [
        {"name": "a", **FLIPFLOP}, {"name": "a@8", **FLIPFLOP}, {"name": "a_b", **FLIPFLOP}, {"name": "a+b", **FLIPFLOP}]})
    plan = resolve_plan(suite, [MODEL], data_dir=tmp_path)
    assert [item.task for item in plan.items] == ["a", "a@8", "a_b", "a+b"]


def test_a_length_task_and_a_task_named_like_its_log_are_refused(tmp_path):
    """An lm-eval task at a length logs as TASK_LENGTH: another task of that very name would write
    the same file (found by the plan, which each kind's log names come from)."""
    from path_eval.plan.names import check_log_names
    from path_eval.plan.resolve import PlannedItem
    from path_eval.suites import load_suite

    suite = load_suite(str(suite_file(tmp_path / "suites")))
    items = [PlannedItem(task="hotpotqa", kind="lm_eval", length=4096, models=["m"], lm_eval_tasks=["hotpotqa_4096"]),
             PlannedItem(task="hotpotqa_4096", kind="lm_eval", length=None, models=["m"],
                         lm_eval_tasks=["other"])]
    with pytest.raises(PathEvalError, match="'hotpotqa .hotpotqa_4096.' and 'hotpotqa_4096 .hotpotqa_4096.'"):
        check_log_names(suite, items, ["m"])
    check_log_names(suite, items, ["n"])  # neither runs on model n


def test_two_tasks_of_one_lm_eval_name_are_refused(tmp_path):
    """Two tasks that lm-eval would name alike share lm_eval/MODEL/samples_NAME_DATE.jsonl."""
    from path_eval.plan.names import check_log_names
    from path_eval.plan.resolve import PlannedItem
    from path_eval.suites import load_suite

    suite = load_suite(str(suite_file(tmp_path / "suites")))
    items = [PlannedItem(task=t, kind="lm_eval", length=None, models=["m"], lm_eval_tasks=["piqa"])
             for t in ("piqa", "piqa_again")]
    with pytest.raises(PathEvalError, match="lm-eval names of tasks 'piqa .piqa.' and 'piqa_again .piqa.'"):
        check_log_names(suite, items, ["m"])


def test_every_builtin_suite_passes_the_name_checks():
    """The checks refuse nothing the harness ships (their plans run in tests/plan)."""
    from path_eval.plan.names import check_suite_names
    from path_eval.suites import load_suite
    from path_eval.suites.loader import builtin_suites

    for file in sorted(builtin_suites().glob("*.yaml")):
        check_suite_names(load_suite(file.stem))


def test_two_suites_of_one_name_never_share_a_default_folder(tmp_path):
    """Two suite files both named `twin` (a copy edited apart) run without --out: each gets its own
    runs/twin-KEY, since KEY hashes the suite's definition; the same file finds its folder again."""
    from path_eval.cli import build_parser, default_out
    from path_eval.suites import load_suite

    first = suite_file(tmp_path / "a", "twin")
    second = suite_file(tmp_path / "b", "twin", tasks=[{"name": "ff", **FLIPFLOP, "samples": 3}])
    same = suite_file(tmp_path / "c", "twin")

    def folder(file: Path) -> Path:
        args = build_parser().parse_args(["run", "--suite", str(file), "--model", MODEL, "--data-dir", "d"])
        return default_out(args, load_suite(str(file)))

    assert folder(first).name.startswith("twin-") and folder(second).name.startswith("twin-")
    assert folder(first) != folder(second)
    assert folder(first) == folder(same)


# ---------------------------------------------------------------- links and stale staging files

def test_a_dangling_resume_link_is_refused_and_its_target_never_made(cli, tmp_path):
    out, target = tmp_path / "work" / "out", tmp_path / "elsewhere" / "made.db"
    (out / "resume").mkdir(parents=True)
    os.symlink(target, out / "resume" / "flipflop_rope-0123456789abcdef_rank0.db")
    line = refused(cli, "symbolic link", "run", "--suite", suite_file(tmp_path / "suites"), "--model", MODEL,
                   "--out", out)
    assert "flipflop_rope-0123456789abcdef_rank0.db" in line and not target.parent.exists()


@pytest.mark.parametrize("link", ["samples/flipflop_rope/ff@8.jsonl", "samples/flipflop_rope", "samples",
                                  "results.json", "lm_eval", "curves/x/y.npy"])
def test_a_link_anywhere_in_the_run_folder_is_refused(link, cli, tmp_path):
    out, outside = tmp_path / "work" / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("untouched")
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / "keep.txt" if link.endswith((".jsonl", ".json", ".npy")) else outside, out / link)
    line = refused(cli, "symbolic link", "run", "--suite", suite_file(tmp_path / "suites"), "--model", MODEL,
                   "--out", out)
    assert str(out / link) in line
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "untouched"


def test_a_write_never_goes_through_a_link(tmp_path):
    """The writer itself refuses a link (a cache file, a results file named by the user)."""
    from path_eval.atomic_files import write_atomic, write_json_atomic

    outside = tmp_path / "outside.json"
    outside.write_text("untouched")
    for name, link_target in (("file.json", outside), ("dangling.json", tmp_path / "never-made.json")):
        os.symlink(link_target, tmp_path / name)
        for write in (lambda f: write_atomic("x", f), lambda f: write_json_atomic({}, f)):
            with pytest.raises(PathEvalError, match=f"{name} is a symbolic link"):
                write(tmp_path / name)
    assert outside.read_text() == "untouched" and not (tmp_path / "never-made.json").exists()
    assert not left_behind(tmp_path)


def test_a_resume_cache_that_is_a_link_is_refused(tmp_path):
    from path_eval.lm.request_cache import RequestCache

    os.symlink(tmp_path / "target.db", tmp_path / "cache.db")
    with pytest.raises(PathEvalError, match="cache.db is a symbolic link"):
        RequestCache(tmp_path / "cache.db")
    assert not (tmp_path / "target.db").exists()


def dead_pid() -> int:
    """The id of a process of this host that has ended."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(child.stdout)


def test_staging_files_of_killed_processes_are_removed_and_only_those(tmp_path):
    from path_eval.atomic_files import check_out_folder

    host, dead = socket.gethostname(), dead_pid()
    out = tmp_path / "out"
    stale = [out / f".{host}-{dead}.results.json.partial", out / "samples" / "m" / f".{host}-{dead}.t@8.jsonl.partial",
             out / "lm_eval" / "m" / f".{host}-{dead}.a.b.partial"]
    kept = [out / f".{host}-{os.getpid()}.results.json.partial",  # a live process's, still to be renamed
            out / f".other-host-{dead}.results.json.partial",  # another host's: its processes are not ours to judge
            out / f".{host}-{dead}.partial",  # not a staging name (no target name)
            out / f".{host}-x{dead}.results.json.partial",
            out / "results.json", out / "samples" / "m" / "t@8.jsonl"]
    for file in stale + kept:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("x")
    check_out_folder(out)
    assert [f for f in stale if f.exists()] == [] and [f for f in kept if not f.exists()] == []


def test_a_run_clears_a_killed_runs_staging_files_and_writes_display_named_folders(cli, tmp_path):
    """End to end: a run in a folder where a killed run left a half-written results file finishes
    with no staging file left; a display name with characters a file name cannot hold is its
    folder's slug in samples/, curves/, resume/ and lm_eval/ alike."""
    out = tmp_path / "work" / "out"
    out.mkdir(parents=True)
    stale = out / f".{socket.gethostname()}-{dead_pid()}.results.json.partial"
    stale.write_text('[{"half": ')
    code, err = cli("run", "--suite", suite_file(tmp_path / "suites"), "--model", f"a+b={MODEL}", "--out", out,
                    "--quiet")
    assert code == 0, err
    assert not stale.exists() and not [p for p in out.rglob("*") if p.name.endswith(".partial")]
    assert json.loads((out / "results.json").read_text())
    assert (out / "samples" / "a_b" / "ff@8.jsonl").is_file()
    assert [p.parent.name for p in (out / "lm_eval").glob("*/results_*.json")] == ["a_b"]
    assert [p.name.split("-")[0] for p in (out / "resume").glob("*.db")] == ["a_b"]
    assert all(p.resolve().is_relative_to(out.resolve()) for p in everything_under(tmp_path / "work"))
