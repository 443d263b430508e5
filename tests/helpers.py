"""Helpers shared by the tests: paths of the committed fixture data, the command line in a
subprocess, tiny models, result records, small LongBench-E and BABILong files, token counting and
tensor-size tracking. (Test oracles stay in their own modules: tests/definition.py, the float64
definition; tests/tf32_emulation.py; tests/fla_fixtures.py, fla's checkpoint layout written without
the package under test; tests/shared_data.py builds the full data folder from ../shared/data.)"""
from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from path_eval.models.random_checkpoint import random_model
from path_eval.results import Provenance, ResultRecord
from path_eval.suites import load_suite
from tests.shared_data import DATASETS

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- fixture data

# The committed data folder (tests/fixtures/data, PROVENANCE.md there): a few rows of every suite's
# data in the harness's layout, made by tests/fixtures/make_fixture_data.py.
FIXTURE_DATA = ROOT / "tests" / "fixtures" / "data"


def fixture_data(out: Path, *parts: str) -> Path:
    """A copy of the fixture data folder at `out`, or of the named parts only: a dataset of
    tests/shared_data.DATASETS by task name ("piqa", "ruler_qa_1"), or a path inside the folder
    ("paul_graham_essays"). Tests write into their copy, never into the committed folder."""
    out = Path(out)
    if not parts:
        shutil.copytree(FIXTURE_DATA, out, dirs_exist_ok=True)
        return out
    for part in parts:
        relpath = DATASETS[part].relpath if part in DATASETS else part
        source, target = FIXTURE_DATA / relpath, out / relpath
        if not source.exists():
            raise FileNotFoundError(f"no {relpath} in {FIXTURE_DATA}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)
    return out


# ---------------------------------------------------------------- the command line


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "eval.py", *args], cwd=cwd, capture_output=True, text=True)


def assert_missing_data_line(suite: str, data: Path, missing: str, out: Path, *args):
    """A run whose data lacks `missing` stops before any model loads (the model folder is empty): exit 2,
    one line naming the file and the download command, no results."""
    (out.parent / "model").mkdir(exist_ok=True)
    result = run_cli("run", "--suite", suite, "--model", str(out.parent / "model"), "--data-dir", str(data),
                     "--out", str(out), *args)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: missing data file") and missing in line
    assert f"python eval.py download --suite {suite} --data-dir {data}" in line
    assert not (out / "results.json").exists()


def counted(calls: dict[str, int], name: str, function):
    """`function`, adding one to calls[name] at every call (monkeypatch it in to count a repeat)."""
    def count(*args, **kwargs):
        calls[name] += 1
        return function(*args, **kwargs)
    return count


def finished_requests(out: Path) -> int:
    """Requests a (possibly running) run has committed to its resume cache."""
    from path_eval.lm.request_cache import saved_requests
    from path_eval.run_folder import resume_folder

    return saved_requests(resume_folder(out))


def cache_with_task_index(cache: Path) -> Path:
    """A new cache folder holding lm-eval's task index alone, as `task_yaml_paths` keeps it: a run
    started on it reads the index where it would build it (some 14,000 YAMLs, 10 s of a CPU in every
    process), and makes everything else afresh."""
    from path_eval.atomic_files import write_json_atomic
    from path_eval.tasks.lm_eval_tasks import task_index_file, task_yaml_paths

    write_json_atomic(task_yaml_paths(), task_index_file(cache))
    return cache


# ---------------------------------------------------------------- tiny models


def save_tiny_model(path: Path, variant: str = "path", seed: int = 0) -> Path:
    """random_model(variant, "tiny", seed) saved as a checkpoint folder (Mistral v1 tokenizer)."""
    random_model(variant, "tiny", seed).save_pretrained(path)
    return Path(path)


def write_piqa(data_dir: Path, rows: list[dict]) -> Path:
    """PIQA's validation rows where `download --suite table2` puts them."""
    file = Path(data_dir) / "baber" / "piqa" / "default" / "validation.jsonl"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return file


def spread_weights(model, std: float):
    """Every matrix redrawn from N(0, std), in parameter order: random init leaves attention close
    to uniform, which would hide differences between variants and backends."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, std)
    return model


def tiny_model(variant, dtype=torch.float32, seed=0, **overrides):
    """A 97-token model whose weights are large enough that attention is far from uniform."""
    model = random_model(variant, "tiny", seed, vocab_size=97, num_heads=4, num_kv_heads=2, qk_norm=variant != "path",
                         use_output_gate=variant == "fox", **overrides).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0, 0.15)
            if name.endswith("bt_proj.bias"):
                p.uniform_(-4, 4)
    model.attention_backend = "torch"
    return model.to(dtype)


# ---------------------------------------------------------------- result records

PROVENANCE = dict(model_path="/m", model_type="path_attn", variant="path", config_sha256="c", weights_sha256="w",
                  tokenizer="t", tokenizer_sha256="tok", data_fingerprint="d", data_files=["f"], seed=1234,
                  limit=None, num_fewshot=0, max_length=2048, dtype="float32", device="cpu",
                  attention_backend="torch", batch_size=1, harness_version="0.1.0", git_revision=None,
                  lm_eval_version="0.4.13", torch_version="2", transformers_version="5", python_version="3.11",
                  hostname="h", started_at="now", wall_time_s=1.0, tokens=1, tokens_per_second=1.0,
                  truncated_requests=0, requests_computed=1)


def records(acc=0.55, ppl=18.0, model="m", acc_stderr=0.01, **provenance):
    """Two table2 records (piqa acc, wikitext word_perplexity) with a complete provenance."""
    p = Provenance(**(PROVENANCE | provenance))
    return [ResultRecord(suite="table2", model=model, task="piqa", length=None, metric="acc", value=acc,
                         stderr=acc_stderr, n=1838, higher_is_better=True, provenance=p),
            ResultRecord(suite="table2", model=model, task="wikitext", length=None, metric="word_perplexity",
                         value=ppl, stderr=None, n=62, higher_is_better=False, provenance=p)]


# ---------------------------------------------------------------- LongBench-E files
# Small LongBench-E files in the original's jsonl format (fields input, context, answers, length,
# dataset, language, all_classes, _id), laid out as `eval.py download` writes them:
# DATA/THUDM/LongBench/<name>_e/test.jsonl. Each dataset gets one doc per length bucket; the `length`
# field (words, as in the original) is what the buckets read, not the short context.

LONGBENCH_LENGTHS = (1200, 5100, 9800)  # one doc in each of 0-4k, 4-8k, 8k+
TREC_CLASSES = ["Description", "Entity", "Abbreviation", "Human", "Location", "Numeric value"]

# Per dataset: (input, answers) of its docs, in the shape the original's rows have.
LONGBENCH_DOCS = {
    "2wikimqa": [("Who directed Film A?", ["Jane Roe"]), ("Where was Jane Roe born?", ["Oslo"]),
                 ("Which film came first?", ["Film B"])],
    "hotpotqa": [("Which band formed first?", ["The Reds"]), ("What river flows there?", ["the Rhine"]),
                 ("Who wrote it?", ["Ann Lee", "A. Lee"])],
    "multifieldqa_en": [("What is the capacity?", ["40 litres"]), ("Who founded it?", ["John Smith"]),
                        ("When was it built?", ["1887"])],
    "qasper": [("What dataset do they use?", ["SQuAD"]), ("Is the model pretrained?", ["yes"]),
               ("How many layers?", ["12", "twelve"])],
    "multi_news": [("", ["Officials said the bridge will reopen in May after repairs."]),
                   ("", ["The company reported higher profits this year."]),
                   ("", ["Storms closed schools across the region on Monday."])],
    "gov_report": [("", ["The agency found gaps in oversight of the program."]),
                   ("", ["Costs rose because of delays in construction."]),
                   ("", ["The report recommends better data collection."])],
    "trec": [("Question: What does NASA stand for?\nType:", ["Abbreviation"]),
             ("Question: Who invented the telephone?\nType:", ["Human"]),
             ("Question: How far is the moon?\nType:", ["Numeric value"])],
    "triviaqa": [("Passage: The capital of France is Paris.\nQuestion: What is the capital of France?\nAnswer:",
                  ["Paris"]),
                 ("Passage: Water boils at 100 degrees.\nQuestion: At what temperature does water boil?\nAnswer:",
                  ["100 degrees", "100"]),
                 ("Passage: The sun is a star.\nQuestion: What is the sun?\nAnswer:", ["a star"])],
    "samsum": [("Dialogue: Ann: Lunch? Bob: Sure.\nSummary: ", ["Ann and Bob will have lunch."]),
               ("Dialogue: Tom: I'm late. Eve: OK.\nSummary: ", ["Tom is late."]),
               ("Dialogue: Kim: Party at 8. Joe: I'll come.\nSummary: ", ["Joe will come to Kim's party at 8."])],
    "lcc": [("", ["    return total / count"]), ("", ["for item in items:"]), ("", ["x = compute(y)"])],
    "repobench-p": [("import os\n", ["path = os.path.join(root, name)"]), ("def f():\n", ["    return g(1)"]),
                    ("class A:\n", ["    value = 3"])],
    "passage_count": [("", ["7"]), ("", ["12"]), ("", ["3"])],
    "passage_retrieval_en": [("An abstract about rivers.", ["Paragraph 4"]),
                             ("An abstract about mountains.", ["Paragraph 11"]),
                             ("An abstract about deserts.", ["Paragraph 2"])],
}


def longbench_row(dataset: str, index: int, question: str, answers: list[str]) -> dict:
    return {"input": question, "context": f"Context {index} of {dataset}: some passages about the question.",
            "answers": answers, "length": LONGBENCH_LENGTHS[index], "dataset": dataset, "language": "en",
            "all_classes": TREC_CLASSES if dataset == "trec" else None, "_id": f"{dataset}-{index:04x}"}


def write_longbench_e(data_dir: Path, datasets=None) -> Path:
    """The suite's datasets (or those named) as local files; returns data_dir."""
    for task in load_suite("longbench_e").tasks:
        if datasets is not None and task.name not in datasets:
            continue
        target = Path(data_dir) / task.data.hf_path / task.data.hf_config / f"{task.data.split}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        rows = [longbench_row(task.name, i, q, a) for i, (q, a) in enumerate(LONGBENCH_DOCS[task.name])]
        target.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return Path(data_dir)


# ---------------------------------------------------------------- BABILong files
# Small BABILong files in the hub's row format (fields input, question, target), laid out as `eval.py
# download` writes them: DATA/<hub set>/<N>k/qaM.jsonl, the hub set RMT-team/babilong-1k-samples (the
# suite's choice up to 32k) unless told. Per task and length two rows:
# bAbI-style facts among filler sentences (a longer filler at longer lengths, far shorter than the
# real configs, to keep generation cheap on a CPU).

BABILONG_FILLER = "The rain kept falling on the old town while the bells rang. "
# Per task: (facts, question, target) of its two rows.
BABILONG_ROWS = {
    "qa1": [("Mary went to the office. John moved to the kitchen.", "Where is Mary?", "office"),
            ("Sandra travelled to the garden. Sandra went to the hallway.", "Where is Sandra?", "hallway")],
    "qa2": [("John got the milk. John moved to the bedroom.", "Where is the milk?", "bedroom"),
            ("Mary took the apple. Mary went to the garden.", "Where is the apple?", "garden")],
    "qa3": [("Mary took the apple. Mary went to the bathroom. Mary went to the kitchen.",
             "Where was the apple before the kitchen?", "bathroom"),
            ("John got the milk. John went to the office. John went to the hallway.",
             "Where was the milk before the hallway?", "office")],
    "qa4": [("The office is east of the kitchen. The garden is west of the kitchen.",
             "What is the kitchen east of?", "garden"),
            ("The bedroom is north of the hallway.", "What is north of the hallway?", "bedroom")],
    "qa5": [("Fred took the football there. Fred gave the football to Jeff.", "Who did Fred give the football to?",
             "Jeff"),
            ("Bill picked up the milk there. Bill handed the milk to Mary.", "What did Bill give to Mary?", "milk")],
}


def write_babilong(data_dir: Path, lengths=("0k", "4k"), tasks=tuple(BABILONG_ROWS),
                   hub_set="RMT-team/babilong-1k-samples") -> Path:
    for length in lengths:
        filler = BABILONG_FILLER * (int(length[:-1]) // 4)
        for task in tasks:
            file = Path(data_dir) / hub_set / length / f"{task}.jsonl"
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text("".join(json.dumps({"input": f"{filler}{facts} {filler}", "question": question,
                                                "target": target}) + "\n" for facts, question, target in BABILONG_ROWS[task]))
    return Path(data_dir)


# ---------------------------------------------------------------- token counting and tensor sizes


def tokens(tokenizer, text: str) -> int:
    """Tokens of the prompt as the model reads it, without BOS."""
    return len(tokenizer.encode(text, add_special_tokens=False))


class LargestTensor(TorchDispatchMode):
    """`with LargestTensor() as seen: ...` then `seen.numel` is the largest output's element count
    (memory-shape assertions that do not depend on the allocator or the machine)."""

    def __init__(self):
        super().__init__()
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor):
                self.numel = max(self.numel, t.numel())
        return out


@functools.lru_cache(maxsize=1)
def full_task_manager():
    """lm-eval's own task manager over all its tasks, as stock lm-eval builds it (the reference the
    tests compare with; the harness indexes only the folders of the tasks it runs)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()
