"""The command line's help is for users: the top-level --help opens with what path-eval is, each
command's own --help with what it does, and options show their defaults; `list` says which suites
need a `download`; the README names every command."""
import subprocess
import sys

import pytest

from path_eval.cli import DESCRIPTION, build_parser
from tests.helpers import ROOT

COMMANDS = build_parser()._subparsers._group_actions[0].choices


def help_of(*command: str) -> str:
    out = subprocess.run([sys.executable, "eval.py", *command, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_top_level_help_opens_with_what_path_eval_is():
    text = help_of()
    assert " ".join(text.split("\n\n")[1].split()) == " ".join(DESCRIPTION.split())
    for name in COMMANDS:
        assert f"    {name} " in text


@pytest.mark.parametrize("name", [name for name in COMMANDS if name != "lm-eval"])  # lm-eval's --help is its own
def test_each_commands_help_says_what_it_does(name):
    description = " ".join(help_of(name).split("\n\n")[1].split())
    summary = " ".join(COMMANDS[name].description.split())
    assert description == summary and not description.startswith("options:")


def test_options_show_their_defaults():
    text = " ".join(help_of("run").split())
    for option, default in [("--device", "cpu"), ("--batch-size", "1"), ("--seed", "1234"),
                            ("--bootstrap-iters", "100000")]:
        after = text.split(f"{option} {option.lstrip('-').replace('-', '_').upper()} ", 1)[1]
        assert f"(default: {default})" in after.split(" --", 1)[0], option
    assert "(default: None)" not in text


def test_list_says_which_suites_need_data():
    """(What `list` imports: test_import_weight.py.)"""
    out = subprocess.run([sys.executable, "eval.py", "list"], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    data = {line.split(":")[0].removeprefix("suite "): next_line.rsplit("data: ", 1)[1]
            for line, next_line in zip(lines, lines[1:]) if line.startswith("suite ")}
    # the README's table: ci and phonebook read no data folder; table2 and ruler are downloaded
    assert data["ci"] == data["phonebook"] == "nothing to download"
    assert data["table2"] == "`eval.py download --suite table2 --data-dir DATA` first"
    assert data["ruler"] == "`eval.py download --suite ruler --data-dir DATA` first"
    assert "lengths: each task's own" in out.stdout.split("suite ci:", 1)[1].split("\n")[1]


def test_the_readme_names_every_command():
    readme = (ROOT / "README.md").read_text()
    assert [name for name in COMMANDS if f"`python eval.py {name}`" not in readme] == []


def test_what_list_says_of_data_is_what_download_fetches():
    """Each kind's quick answer (`fetches_data`, no lm-eval import) against the splits `download` reads."""
    from path_eval.kinds import KINDS
    from path_eval.suites import available_suites, load_suite

    for name in available_suites():
        suite = load_suite(name)
        for task in suite.tasks:
            splits = KINDS[task.kind].splits(task, suite, task.lengths or suite.lengths)
            assert KINDS[task.kind].fetches_data(task, suite) == bool(splits), (name, task.name)
