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
from path_eval.metrics.theoremqa import theoremqa_accuracy
from path_eval.tasks.theoremqa import INSTRUCTION
from path_eval.results import load_records
from tests.helpers import ROOT, fixture_data, save_tiny_model

SUITE_FILE = ROOT / "suites" / "conversion.yaml"
# The rows lm-eval runs (TheoremQA's through the theoremqa kind; the code rows need
# `--allow-code-execution`; RULER's 4096-token prompts are beyond a CPU test): one MMLU subject
# stands for the 57.
MATH_SUBJECTS = ("algebra", "counting_and_prob", "geometry", "intermediate_algebra", "num_theory", "prealgebra",
                 "precalc")
LM_EVAL_ROWS = ["t4_gsm8k", "t5_gsm8k", "t5_theoremqa", "t5_mmlu_anatomy", "t5_hellaswag", "t5_winogrande",
                "t5_gpqa_diamond",
                *(f"t5_math_{s}" for s in MATH_SUBJECTS)]


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
                    "t5_mbpp": {"benchmark": "mbpp_sanitized", "prompt": "instruct"}}
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
    # GSM8K in both tables: lm-eval's gsm8k, 5 shots, flexible-extract; Table 5's (and only Table 5's rows)
    # prompted through the chat template in the paper's protocol
    gsm8k = [(t.name, t.lm_eval_task, t.num_fewshot, t.lm_eval_filter) for t in suite.tasks
             if t.lm_eval_task == "gsm8k"]
    assert gsm8k == [("t4_gsm8k", "gsm8k", 5, "flexible-extract"), ("t5_gsm8k", "gsm8k", 5, "flexible-extract")]
    paper_chat = {t.name for t in suite.tasks if t.paper_chat_template}
    assert paper_chat == {t.name for t in suite.tasks if t.name.startswith("t5_")} and not suite.paper_chat_template
    assert {t["name"] for t in raw["tasks"] if t.get("paper_chat_template")} >= {"t5_humaneval", "t5_mbpp"}


def test_only_tasks_sharing_an_lm_eval_task_are_named_after_the_suite_task():
    """lm-eval keys results and its request cache by task name: the conversion suite's two GSM8K rows go
    by their own names, every other lm-eval row of every built-in suite by lm-eval's (the names of
    their records and caches before the conversion suite had two; tests/runner/test_golden_records.py)."""
    from path_eval.suites import load_suite
    from path_eval.tasks.lm_eval_tasks import lm_eval_name

    renamed = {}
    for file in sorted((ROOT / "suites").glob("*.yaml")):
        suite = load_suite(file.stem)
        for task in suite.tasks:
            if task.lm_eval_task is not None and lm_eval_name(task, suite, None) != task.lm_eval_task:
                renamed[suite.name, task.name] = lm_eval_name(task, suite, None)
    assert renamed == {("conversion", "t4_gsm8k"): "t4_gsm8k", ("conversion", "t5_gsm8k"): "t5_gsm8k"}


def test_download_asks_for_each_split_the_lm_eval_rows_read(suites, tmp_path, monkeypatch):
    from path_eval.suites import load_suite
    from path_eval.cli import download_splits

    suite = load_suite("conversion")
    lm_eval_rows = [t for t in suite.tasks if t.kind == "lm_eval"]
    found = {(s.path, s.config, s.split) for s in download_splits(suite, lm_eval_rows, None)}
    # each config's evaluated split, and its shots' split where the row takes shots (lm-eval's YAMLs)
    assert found == {("openai/gsm8k", "main", "test"), ("openai/gsm8k", "main", "train"),
                     ("Rowan/hellaswag", None, "validation"), ("allenai/winogrande", "winogrande_xl", "validation"),
                     ("Idavidrein/gpqa", "gpqa_diamond", "train")} | \
        {("EleutherAI/hendrycks_math", config, "test") for config in ("algebra", "counting_and_probability", "geometry",
         "intermediate_algebra", "number_theory", "prealgebra", "precalculus")} | \
        {("cais/mmlu", t.lm_eval_task.removeprefix("mmlu_"), split) for t in lm_eval_rows
         if t.name.startswith("t5_mmlu_") for split in ("test", "dev")}
    [theoremqa] = [t for t in suite.tasks if t.kind == "theoremqa"]
    assert [str(s) for s in download_splits(suite, [theoremqa], None)] == ["TIGER-Lab/TheoremQA [test]"]
    ruler = [t for t in suite.tasks if t.kind == "generated"]
    assert {(s.path, s.config, s.split) for s in download_splits(suite, ruler, None)} == {
        ("rajpurkar/squad_v2", "squad_v2", "validation"), ("hotpotqa/hotpot_qa", "distractor", "validation")}


def test_tasks_takes_shell_patterns_as_models_entries_do(suites):
    """One table of the suite is one short --tasks: names and fnmatch patterns (case-sensitive, as a
    task's `models:` entries), each task once, in the order given and each pattern's in the suite's."""
    from path_eval.suites import load_suite

    suite = load_suite("conversion")
    names = [t.name for t in suite.tasks]
    assert [t.name for t in suite.select(["t5_*"])] == [n for n in names if n.startswith("t5_")]
    assert [t.name for t in suite.select(["t4_*", "t5_gsm8k"])] == ["t4_gsm8k", "t4_humaneval", "t4_mbpp_plus",
                                                                    "t5_gsm8k"]
    assert [t.name for t in suite.select(["t5_gsm8k", "t?_gsm8k"])] == ["t5_gsm8k", "t4_gsm8k"]
    assert [t.name for t in suite.select(["t5_math_[ag]*"])] == ["t5_math_algebra", "t5_math_geometry"]


@pytest.mark.parametrize("tasks, message", [
    ("t4_*,T5_*", "error: suite conversion: --tasks pattern 'T5_*' matches none of its tasks t4_gsm8k, "),
    ("t4_gsm8k,gsm8k", "error: suite conversion has no task 'gsm8k': choose from its tasks t4_gsm8k, ")])
def test_a_tasks_entry_matching_nothing_is_one_line_listing_the_tasks(suites, tmp_path, capsys, tasks, message):
    assert main(["download", "--suite", "conversion", "--tasks", tasks, "--data-dir", str(tmp_path / "data")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(message) and "t5_ruler_qa_2" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("error, needs", [
    (OSError("Dataset 'Idavidrein/gpqa' is a gated dataset on the Hub. You must be authenticated to access it."),
     "accept its terms at https://huggingface.co/datasets/Idavidrein/gpqa"),
    (OSError("Failed to resolve 'huggingface.co'"), "download needs the internet")])
def test_a_refused_fetch_is_one_line_saying_what_it_needs(suites, tmp_path, monkeypatch, capsys, error, needs):
    def refuse(path, name=None, split=None, **kwargs):
        if path == "Idavidrein/gpqa" or "resolve" in str(error):
            raise error
        return datasets.Dataset.from_list([{"x": 1}])

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    assert main(["download", "--suite", "conversion", "--tasks", "t5_winogrande,t5_gpqa_diamond",
                 "--data-dir", str(tmp_path / "data")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: could not fetch ") and needs in line and "Traceback" not in line
    if "gated" in str(error):
        assert "Idavidrein/gpqa/gpqa_diamond [train]" in line and "HF_TOKEN" in line
        assert (tmp_path / "data/allenai/winogrande/winogrande_xl/validation.jsonl").is_file()


def test_list_shows_the_suite_and_its_rows(suites, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "suite conversion: PaTH paper Tables 4 and 5" in out
    assert "`eval.py download --suite conversion --data-dir DATA` first" in out
    assert "task t5_gpqa_diamond (lm-eval gpqa_diamond_zeroshot): acc" in out
    assert "task t5_ruler_qa_2 (" in out and "lengths 4096" in out


# A few rows of each dataset the lm-eval rows read, in the fields of the hub's rows (hellaswag and
# winogrande: the committed fixture folder's).
def gsm8k_row(i):
    return {"question": f"Tom has {i} apples and buys {i + 2} more. How many apples does he have?",
            "answer": f"He has {i} + {i + 2} = {2 * i + 2} apples.\n#### {2 * i + 2}"}


FIXTURE_ROWS = {
    "openai/gsm8k/main/test": [gsm8k_row(i) for i in range(2)],
    "openai/gsm8k/main/train": [gsm8k_row(i) for i in range(10, 16)],
    "cais/mmlu/anatomy/test": [{"question": f"Which bone is number {i}?", "subject": "anatomy",
                                "choices": ["femur", "tibia", "ulna", "radius"], "answer": i % 4} for i in range(2)],
    "cais/mmlu/anatomy/dev": [{"question": f"Which organ is number {i}?", "subject": "anatomy",
                               "choices": ["heart", "lung", "liver", "kidney"], "answer": i % 4} for i in range(5)],
    # TheoremQA's fields as the hub gives them (answers as text, Picture: whether the row has one)
    "TIGER-Lab/TheoremQA/default/test": [
        {"Question": "What is 6 times 7?", "Answer": "42", "Answer_type": "integer", "Picture": False},
        {"Question": "Is 7 a prime number?", "Answer": "True", "Answer_type": "bool", "Picture": False}],
    "Idavidrein/gpqa/gpqa_diamond/train": [{"Question": f"What is {i} squared?", "Correct Answer": str(i * i),
                                            "Incorrect Answer 1": str(i + 1), "Incorrect Answer 2": str(2 * i + 3),
                                            "Incorrect Answer 3": str(i * i + 5)} for i in range(2, 4)],
}
# MATH: one problem in algebra, two in every other subject (so that t5_math's mean over problems differs
# from the plain mean of the subjects)
MATH_CONFIGS = dict(zip(MATH_SUBJECTS, ("algebra", "counting_and_probability", "geometry", "intermediate_algebra",
                                        "number_theory", "prealgebra", "precalculus")))
for subject, config in MATH_CONFIGS.items():
    FIXTURE_ROWS[f"EleutherAI/hendrycks_math/{config}/test"] = [
        {"problem": f"What is ${i}+{i}$?", "level": "Level 1", "type": config, "solution": f"$\\boxed{{{2 * i}}}$"}
        for i in range(1 if subject == "algebra" else 2)]


def conversion_data(folder):
    data = fixture_data(folder / "data", "hellaswag", "winogrande")
    for relpath, rows in FIXTURE_ROWS.items():
        file = data / f"{relpath}.jsonl"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return data


@pytest.mark.slow  # the lm-eval rows on a tiny model, four of them generating
def test_run_from_a_data_folder_and_the_layout_of_both_tables(suites, tmp_path, monkeypatch, capsys):
    from path_eval.api import load_results

    monkeypatch.setenv("PATH_EVAL_CACHE", str(tmp_path / "cache"))
    save_tiny_model(tmp_path / "tiny", "path")
    data, out = conversion_data(tmp_path), tmp_path / "run"
    # A batch holds every row of one generation setting: the random model rarely stops early, so one
    # row a batch decoded each to its budget in turn (some 6,400 steps, 25 s on a CPU).
    assert main(["run", "--suite", "conversion", "--tasks", ",".join(LM_EVAL_ROWS), "--model", str(tmp_path / "tiny"),
                 "--data-dir", str(data), "--out", str(out), "--limit", "2", "--max-length", "2048", "--quiet",
                 "--bootstrap-iters", "0", "--batch-size", "16"]) == 0
    records = {(r.task, r.metric): r for r in load_records(out)}
    assert set(records) == {("t4_gsm8k", "exact_match"), ("t5_gsm8k", "exact_match"), ("t5_mmlu_anatomy", "acc"),
                            ("t5_theoremqa", "theoremqa_accuracy"), ("t5_hellaswag", "acc_norm"),
                            ("t5_winogrande", "acc"), ("t5_gpqa_diamond", "acc"), ("t5_math", "exact_match")} | \
        {(f"t5_math_{s}", "exact_match") for s in MATH_SUBJECTS}
    # TheoremQA: each logged response scored by the original's rule, their mean the record
    logged = [json.loads(line) for line in (out / "samples" / "tiny" / "t5_theoremqa.jsonl").read_text().splitlines()]
    rows = FIXTURE_ROWS["TIGER-Lab/TheoremQA/default/test"]
    scores = [theoremqa_accuracy(row["response"][0], rows[row["doc_id"]]["Answer"], rows[row["doc_id"]]["Answer_type"])
              for row in logged]
    assert len(scores) == 2 and records["t5_theoremqa", "theoremqa_accuracy"].value == sum(scores) / 2
    prompt = logged[0]["request"][0][0]  # (context, generation options)
    assert prompt == f"{INSTRUCTION}\n\nProblem:\nWhat is 6 times 7?\nSolution:"
    assert records["t5_math_algebra", "exact_match"].n == 1
    assert records["t5_gsm8k", "exact_match"].provenance.num_fewshot == 5
    # MATH's column: the mean over its problems, each subject weighed by its count (lm-eval's weight_by_size)
    parts = [records[f"t5_math_{s}", "exact_match"] for s in MATH_SUBJECTS]
    assert records["t5_math", "exact_match"].n == 13
    assert records["t5_math", "exact_match"].value == pytest.approx(sum(p.n * p.value for p in parts) / 13)
    # GSM8K's values are lm-eval's own under the filter the suite names, each table's under its own name
    lm_eval_results = json.loads(next((out / "lm_eval").rglob("results_*.json")).read_text())["results"]
    assert "gsm8k" not in lm_eval_results
    for name in ("t4_gsm8k", "t5_gsm8k"):
        assert records[name, "exact_match"].value == lm_eval_results[name]["exact_match,flexible-extract"]
    capsys.readouterr()
    assert main(["report", str(out), "--layout", "conversion", "--format", "csv"]) == 0
    table4, table5 = capsys.readouterr().out.strip().split("\n\n")
    shown = {key: f"{100 * records[key].value:.1f}" for key in records}
    # the run holds Table 5's rows and Table 4's GSM8K: each table's GSM8K column reads its own row
    assert table4.splitlines()[:3] == ["PaTH paper Table 4: SmolLM2-1.7B converted to PaTH,GSM8K,HumanEval,MBPP+",
                                       f"tiny,{shown['t4_gsm8k', 'exact_match']},-,-", "RoPE (paper),19.9,23.1,47.1"]
    header, row, *paper = table5.splitlines()
    assert [line.split(",")[0] for line in paper] == ["Teacher RoPE (paper)", "Student PaTH (paper)"]
    assert header == ("PaTH paper Table 5: Qwen2.5-7B-Instruct converted to PaTH,MMLU,HellaSwag,Winogrande,"
                      "GPQA Diamond,TheoremQA,GSM8K,MATH,HumanEval,MBPP,RULER 4K")
    assert row == ",".join(["tiny", "-", shown["t5_hellaswag", "acc_norm"], shown["t5_winogrande", "acc"],
                            shown["t5_gpqa_diamond", "acc"], shown["t5_theoremqa", "theoremqa_accuracy"],
                            shown["t5_gsm8k", "exact_match"],
                            shown["t5_math", "exact_match"], "-", "-", "-"])
    md = load_results(out).report("conversion", "markdown")
    assert "**PaTH paper Table 4: SmolLM2-1.7B converted to PaTH**" in md and "the paper leaves unsaid" in md
    assert f"| tiny | - | {shown['t5_hellaswag', 'acc_norm']} |" in md
    assert "not reproduced" not in md and "CAUTION: the runs used limit=['2'], the paper None" in md
    latex = load_results(out).report("conversion", "latex")
    assert latex.count(r"\begin{tabular}") == 2 and "% PaTH paper Table 5: Qwen2.5-7B-Instruct" in latex
    assert f"tiny & - & {shown['t5_hellaswag', 'acc_norm']} &" in latex
    assert main(["report", str(out), "--layout", "conversion"]) == 0
    terminal = capsys.readouterr().out
    assert "Table 4: SmolLM2-1.7B" in terminal and "Table 5: Qwen2.5-7B-Instruct" in terminal
    page = load_results(out).html(tmp_path / "study.html", "conversion").read_text()
    assert page.count("PaTH paper Table 4: SmolLM2-1.7B") == 1 and "Student PaTH (paper)" in page


def test_the_layout_places_each_model_in_its_table_beside_the_paper_rows():
    """Hand-made records: a SmolLM2-like model (Table 4's HumanEval and GSM8K), a Qwen-like one (MMLU's
    and RULER's means, Table 5's GSM8K) and one with Table 5's GSM8K only, which is a row of Table 5
    alone; the paper's rows from results/paper/."""
    from path_eval.reports.tables import paper_layouts, value_cell
    from path_eval.results import Provenance, ResultRecord
    from tests.helpers import PROVENANCE

    p = Provenance(**PROVENANCE)
    made = [("smol", "t4_humaneval", "pass@1", None, 0.25), ("smol", "t4_gsm8k", "exact_match", None, 0.3),
            ("qwen", "t5_mmlu", "acc", None, 0.7), ("qwen", "t5_ruler", "score", 4096, 0.875),
            ("qwen", "t5_gsm8k", "exact_match", None, 0.8), ("only_gsm8k", "t5_gsm8k", "exact_match", None, 0.5),
            ("qwen", "t5_mmlu_anatomy", "acc", None, 0.6)]
    records = [ResultRecord(suite="conversion", model=m, task=t, length=n, metric=metric, value=v, stderr=None, n=4,
                            higher_is_better=True, provenance=p) for m, t, metric, n, v in made]
    (_, header4, rows4, note4), (_, header5, rows5, note5) = paper_layouts("conversion", records)
    assert header4 == ["model", "GSM8K", "HumanEval", "MBPP+"]
    # the paper's Table 4 as printed in section 4.3 (RoPE, FoX, PaTH, Base)
    assert rows4 == [["smol", "30.0", value_cell(records[0]), "-"],
                     ["RoPE (paper)", "19.9", "23.1", "47.1"], ["FoX (paper)", "15.5", "21.3", "48.2"],
                     ["PaTH (paper)", "20.1", "25.6", "51.3"], ["Base (paper)", "8.6", "16.4", "38.6"]]
    assert [row[0] for row in rows5] == ["qwen", "only_gsm8k", "Teacher RoPE (paper)", "Student PaTH (paper)"]
    assert rows5[0] == ["qwen", "70.0", "-", "-", "-", "-", "80.0", "-", "-", "-", "87.5"]
    assert rows5[2:] == [["Teacher RoPE (paper)", "74.21", "85.2", "71.51", "33.33", "18.12", "80.29", "69.1", "82.32",
                          "74.71", "94.37"],
                         ["Student PaTH (paper)", "73.28", "84.83", "68.9", "34.34", "21.88", "80.67", "65.38", "77.44",
                          "75.1", "93.24"]]
    assert "measured here: smol;" in note4 and "measured here: qwen, only_gsm8k;" in note5
    assert "not reproduced" not in note4 + note5
    assert "the paper leaves unsaid" in note4 and "CAUTION" not in note4 + note5


def test_a_filter_the_task_lacks_is_one_line_before_any_model_loads(suites, tmp_path, capsys):
    suite = tmp_path / "gsm8k_filter.yaml"
    suite.write_text("name: gsm8k_filter\ndescription: a filter lm-eval's gsm8k lacks\ntasks:\n"
                     "  - {name: gsm8k, lm_eval_task: gsm8k, num_fewshot: 5, lm_eval_filter: last-number,\n"
                     "     metrics: [exact_match]}\n")
    (tmp_path / "model").mkdir()
    assert main(["run", "--suite", str(suite), "--model", str(tmp_path / "model"),
                 "--data-dir", str(conversion_data(tmp_path)), "--out", str(tmp_path / "run")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == ("error: task gsm8k: lm-eval's gsm8k has no filter 'last-number': choose one of strict-match, "
                    "flexible-extract for lm_eval_filter")
    assert not (tmp_path / "run" / "results.json").exists()
