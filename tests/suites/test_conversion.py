"""The `conversion` suite (the PaTH paper's Tables 4 and 5, issue 49): it loads with every row the
paper has, `download` asks for exactly the splits its lm-eval tasks read (GPQA's gated refusal in one
line), a run on a tiny random checkpoint from a data folder of a few rows per dataset gives its
non-code rows, and `report --layout conversion` prints both tables in every format."""
import json
import shutil
from pathlib import Path

import datasets
import lm_eval
import pytest
import yaml

from path_eval.cli import main
from path_eval.kinds import KINDS
from path_eval.results import load_records
from tests.helpers import ROOT, fixture_data, save_tiny_model

SUITE_FILE = ROOT / "suites" / "conversion.yaml"
# The rows lm-eval tasks run (the code rows need `--allow-code-execution`; RULER's 4096-token prompts
# are beyond a CPU test): one MMLU subject stands for the 57.
LM_EVAL_ROWS = ["t4_gsm8k", "t5_mmlu_anatomy", "t5_hellaswag", "t5_winogrande", "t5_gpqa_diamond", "t5_gsm8k",
                "t5_math"]


@pytest.fixture
def suites(tmp_path, monkeypatch):
    """The built-in suites, read from a copy where the code kind is not registered yet (the code branch
    of issue 49 adds it): conversion.yaml without its code rows, every other row as committed."""
    if "code" in KINDS:
        return ROOT / "suites"
    folder = tmp_path / "suites"
    shutil.copytree(ROOT / "suites", folder)
    raw = yaml.safe_load(SUITE_FILE.read_text())
    raw["tasks"] = [task for task in raw["tasks"] if "code" not in task]
    (folder / "conversion.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.setattr("path_eval.suites.loader.builtin_suites", lambda: folder)
    return folder


def test_the_suite_holds_every_column_of_both_tables(suites):
    from path_eval.suites import load_suite

    suite = load_suite("conversion")
    raw = yaml.safe_load(SUITE_FILE.read_text())
    code = {t["name"]: t["code"] for t in raw["tasks"] if "code" in t}
    assert code == {"t4_humaneval": {"benchmark": "humaneval", "prompt": "completion"},
                    "t4_mbpp_plus": {"benchmark": "mbpp_plus", "prompt": "completion"},
                    "t5_humaneval": {"benchmark": "humaneval", "prompt": "instruct"},
                    "t5_mbpp": {"benchmark": "mbpp", "prompt": "instruct"}}
    names = {t.name for t in suite.tasks} | set(code) | {a.name for a in suite.aggregates}
    for table in ("table4", "table5"):
        paper = json.loads((ROOT / "results" / "paper" / f"{table}.json").read_text())
        for column in paper["columns"]:
            assert column.get("task") in names or column.get("not_reproduced"), column
    # MMLU: every subject task lm-eval's mmlu group holds, 5 shots each, their mean the column
    folder = Path(lm_eval.__file__).parent / "tasks/mmlu/default"
    categories = yaml.safe_load((folder / "_mmlu.yaml").read_text())["task"]
    tags = {yaml.safe_load((folder / f"_{c}.yaml").read_text())["task"][0] for c in categories}
    subjects = sorted(yaml.safe_load(p.read_text())["task"].removeprefix("mmlu_") for p in folder.glob("mmlu_*.yaml")
                      if yaml.safe_load(p.read_text())["tag"] in tags)
    assert len(subjects) == 57
    mmlu = [t for t in suite.tasks if t.name.startswith("t5_mmlu_")]
    assert [(t.lm_eval_task, t.num_fewshot) for t in mmlu] == [(f"mmlu_{s}", 5) for s in subjects]
    assert next(a for a in suite.aggregates if a.name == "t5_mmlu").mean_of == [f"t5_mmlu_{s}/acc" for s in subjects]
    # RULER 4K: suites/ruler.yaml's 13 tasks at 4096 tokens only, their ruler_13 mean as the column
    ruler = load_suite("ruler")
    mine = [t for t in suite.tasks if t.name.startswith("t5_ruler_")]
    assert [(t.generator, t.metrics, t.data, t.lengths) for t in mine] == \
        [(t.generator, t.metrics, t.data, [4096]) for t in ruler.tasks]
    [ruler_13] = [a for a in ruler.aggregates if a.name == "ruler_13"]
    assert next(a for a in suite.aggregates if a.name == "t5_ruler").mean_of == [f"t5_ruler_{m}" for m in ruler_13.mean_of]
    assert suite.task("t4_gsm8k").lm_eval_filter == suite.task("t5_gsm8k").lm_eval_filter == "flexible-extract"
