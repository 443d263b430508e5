"""The Markdown docs: relative links resolve, `python eval.py` commands parse, suite examples load."""
import re
import shlex
from pathlib import Path

import pytest

from path_eval.cli import build_parser
from path_eval.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "kernels" / "README.md",
               ROOT / "training" / "README.md", ROOT / "path_eval" / "zoo" / "README.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of `path`: lower case, punctuation dropped, spaces to dashes."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", path.read_text(), flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_docs_exist():
    for path in DOCS:
        assert path.is_file(), path


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    for target in LINK.findall(path.read_text()):
        target = target if not target.startswith("#") else path.name + target
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = path.parent / file
        assert linked.exists(), f"{path.relative_to(ROOT)} links to {target}"
        if anchor:
            assert anchor in anchors(linked), f"{path.relative_to(ROOT)} links to a missing heading: {target}"


def eval_commands(text: str) -> list[str]:
    """The `python eval.py ...` lines of the fenced bash blocks in `text`, continuations joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line.startswith("python eval.py "):
                commands.append(line)
    return commands


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_eval_commands_parse_with_todays_command_line(path):
    parser = build_parser()
    for command in eval_commands(path.read_text()):
        argv = shlex.split(command, comments=True)[2:]
        if argv and argv[0] == "lm-eval":
            continue  # lm-eval's own command line, passed through unparsed
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{path.relative_to(ROOT)}: `{command}` does not parse")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_suite_examples_load(path, tmp_path):
    for number, example in enumerate(re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)):
        suite = tmp_path / f"example_{number}.yaml"
        suite.write_text(example)
        load_suite(str(suite))
