"""The offline data dir built by ``tests/shared_data.py``, read through lm-eval's own task definitions.

Each task is built from lm-eval's unchanged YAML (and its utils.py ``!function``s), with only the
data source overridden: ``dataset_path: json`` and ``data_files`` pointing at our file. Every row is
checked for structure, and the reformatted sets (HellaSwag, WinoGrande, ARC) are checked on every row
against the source copy: same context(s), choices and gold. A sample of rows also goes through
``build_all_requests``, so the exact (context, continuation) pairs a model would score are checked.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

import tests.shared_data as sd

pytestmark = pytest.mark.shared_data  # row counts and hashes of the full copies

YAMLS = {
    "wikitext": "wikitext/wikitext.yaml",
    "lambada_openai": "lambada/lambada_openai.yaml",
    "piqa": "piqa/piqa.yaml",
    "hellaswag": "hellaswag/hellaswag.yaml",
    "winogrande": "winogrande/default.yaml",
    "arc_easy": "arc/arc_easy.yaml",
    "arc_challenge": "arc/arc_challenge.yaml",
}
SPLIT_KEY = {"train": "training_split", "validation": "validation_split", "test": "test_split"}
N_SAMPLED = 150  # rows per task that go through build_all_requests


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return sd.build_data_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def load_task(data_dir, tmp_path_factory):
    import datasets
    import lm_eval.tasks
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    datasets.disable_progress_bars()
    cache = tmp_path_factory.mktemp("hf_datasets_cache")
    tasks_dir = Path(lm_eval.tasks.__file__).parent
    built = {}

    def load(name: str):
        if name not in built:
            spec = sd.DATASETS[name]
            cfg = load_yaml(tasks_dir / YAMLS[name], resolve_func=True)
            assert cfg["task"] == name
            assert cfg["dataset_path"] == spec.path  # the layout mirrors lm-eval's own source
            assert (cfg.get("dataset_name") or "default") == spec.config
            cfg.update(
                dataset_path="json",
                dataset_name=None,
                dataset_kwargs={
                    "data_files": {spec.split: str(data_dir / spec.relpath)},
                    "cache_dir": str(cache),
                },
            )
            for key in SPLIT_KEY.values():
                cfg[key] = None
            cfg[SPLIT_KEY[spec.split]] = spec.split
            cfg.pop("fewshot_split", None)
            built[name] = ConfigurableTask(config=cfg)
        return built[name]

    return load


def sampled_requests(task, ids) -> dict[int, list[tuple]]:
    """Request arguments per original doc index, built by lm-eval's full request pipeline."""
    ids = sorted(set(ids))
    task.build_all_requests(samples=ids)
    out: dict[int, list[tuple]] = {}
    for inst in task.instances:
        out.setdefault(ids[inst.doc_id], []).append(inst.arguments)
    assert sorted(out) == ids
    return out


def sample(n: int, seed: int, always=()) -> list[int]:
    rng = random.Random(seed)
    return sorted(set(rng.sample(range(n), min(N_SAMPLED, n))) | set(always))


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def source_jsonl(*parts: str) -> list[dict]:
    return read_jsonl(sd.SHARED_DATA.joinpath(*parts))


# ---------------------------------------------------------------- the data dir itself


def test_build_writes_only_the_requested_files(tmp_path):
    sd.build_data_dir(tmp_path, ["piqa", "arc_easy"])
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["allenai/ai2_arc/ARC-Easy/test.jsonl", "baber/piqa/default/validation.jsonl"]
    with pytest.raises(KeyError):
        sd.build_data_dir(tmp_path, ["no_such_task"])


def test_layout_and_row_counts(data_dir):
    files = sorted(p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file())
    assert files == sorted(spec.relpath for spec in sd.DATASETS.values())
    counts = {name: len(read_jsonl(data_dir / spec.relpath)) for name, spec in sd.DATASETS.items()}
    assert counts == {
        "wikitext": 62,  # = the published row count of the hub's test split
        "lambada_openai": 5153,
        "piqa": 1838,
        "hellaswag": 10042,
        "winogrande": 1267,
        "arc_easy": 2376,
        "arc_challenge": 1172,
        "ruler_qa_1": 706,  # the SQuAD subset's questions (PROVENANCE.md), answerable or not
        "ruler_qa_2": 100,
    }


def test_lambada_is_the_canonical_file(data_dir):
    data = (data_dir / sd.DATASETS["lambada_openai"].relpath).read_bytes()
    assert hashlib.sha256(data).hexdigest() == (
        "4aa8d02cd17c719165fc8a7887fddd641f43fcafa4b1c806ca8abc31fabdb226"
    )


# ---------------------------------------------------------------- wikitext


def test_wikitext_page_splitting_rules():
    raw = " = A = \n \n x\n \n = = Sec = = \n y\n = = = Sub = = = \n \n = B = \n z\n"
    assert sd.wikitext_pages(raw) == [
        " = A = \n \n x\n \n = = Sec = = \n y\n = = = Sub = = = \n ",
        " = B = \n z\n",  # the last page keeps the file's final newline
    ]
    assert sd.wikitext_pages(" \n = A = \n a") == [" = A = \n a"]  # whitespace-only page dropped


def test_wikitext_through_lm_eval(load_task):
    from lm_eval.tasks.wikitext.preprocess_wikitext import wikitext_detokenizer

    raw = (sd.SHARED_DATA / "wikitext2_raw" / "wiki.test.raw").read_text(encoding="utf-8")
    task = load_task("wikitext")
    docs = list(task.eval_docs)
    assert len(docs) == 62 and list(task.eval_docs.features) == ["page"]
    pages = [d["page"] for d in docs]
    # the pages partition the file, in order; only its leading blank line (a whitespace-only
    # "page" before the first title) is dropped, as the loading script drops it
    assert raw.startswith(" \n = Robert Boulter = \n") and " \n" + "\n".join(pages) == raw
    assert all(sd._is_article_title(p.split("\n", 1)[0]) for p in pages)
    assert sum(sd._is_article_title(line) for line in raw.split("\n")) == 62
    assert pages[0].startswith(" = Robert Boulter = \n") and pages[-1].startswith(" = The Hustler ( film ) = ")
    requests = sampled_requests(task, range(62))
    assert all(requests[i] == [(wikitext_detokenizer(d),)] for i, d in enumerate(docs))


# ---------------------------------------------------------------- lambada


def test_lambada_through_lm_eval(load_task):
    source = source_jsonl("lambada_openai", "lambada_test.jsonl")
    task = load_task("lambada_openai")
    docs = task.eval_docs
    assert list(docs.features) == ["text"] and docs["text"] == [r["text"] for r in source]
    ids = sample(len(source), 1)
    for i, args in sampled_requests(task, ids).items():
        words = source[i]["text"].split(" ")
        assert args == [(" ".join(words[:-1]), " " + words[-1])]


# ---------------------------------------------------------------- piqa


def test_piqa_through_lm_eval(load_task):
    items = source_jsonl("piqa", "valid.jsonl")
    labels = (sd.SHARED_DATA / "piqa" / "valid-labels.lst").read_text().split()
    task = load_task("piqa")
    docs = list(task.eval_docs)
    assert list(task.eval_docs.features) == ["goal", "sol1", "sol2", "label"]
    assert [d["label"] for d in docs] == [int(x) for x in labels]
    assert task.eval_docs.features["label"].dtype == "int64"
    assert [{k: d[k] for k in ("goal", "sol1", "sol2")} for d in docs] == items
    ids = sample(len(docs), 2)
    for i, args in sampled_requests(task, ids).items():
        it = items[i]
        assert args == [
            (f"Question: {it['goal']}\nAnswer:", " " + it["sol1"]),
            (f"Question: {it['goal']}\nAnswer:", " " + it["sol2"]),
        ]
        assert task.doc_to_target(docs[i]) == int(labels[i])


# ---------------------------------------------------------------- hellaswag


HELLASWAG_FIELDS = ["ind", "activity_label", "ctx_a", "ctx_b", "ctx", "endings", "source_id",
                    "split", "split_type", "label"]  # fmt: skip


def test_hellaswag_through_lm_eval(load_task):
    from lm_eval.tasks.hellaswag.utils import preprocess

    copy = sd.read_llamacpp_hellaswag(sd.SHARED_DATA / "hellaswag" / "hellaswag_val_full.txt.bz2")
    task = load_task("hellaswag")
    docs = task.eval_docs  # lm-eval's process_docs has run: query / choices / gold
    assert len(docs) == len(copy) == 10042
    assert list(docs.features)[: len(HELLASWAG_FIELDS)] == HELLASWAG_FIELDS
    assert docs.features["label"].dtype == "string" and docs.features["ind"].dtype == "int64"
    raw = read_jsonl(Path(task.config.dataset_kwargs["data_files"]["validation"]))
    assert all(list(r) == HELLASWAG_FIELDS for r in raw)
    assert all(type(r["label"]) is str and len(r["endings"]) == 4 for r in raw)
    assert [r["ind"] for r in raw] == list(range(10042))

    queries, choices, golds = docs["query"], docs["choices"], docs["gold"]
    changed = 0
    for i, (query, gold, endings) in enumerate(copy):
        # lm-eval's result equals the copy passed through lm-eval's own preprocess() ...
        assert queries[i] == preprocess(query), i
        assert choices[i] == [preprocess(e) for e in endings], i
        assert golds[i] == gold and raw[i]["label"] == str(gold), i
        # ... which is the copy's text itself except where it still has [..] spans or "  "
        if queries[i] != query or choices[i] != endings:
            changed += 1
            assert any("[" in s or "  " in s for s in [query, *endings]), i
    assert changed == 14

    bracket_rows = [i for i, (q, _, es) in enumerate(copy) if any("[" in s for s in [q, *es])]
    ids = sample(len(copy), 3, always=bracket_rows[:5])
    for i, args in sampled_requests(task, ids).items():
        query, gold, endings = copy[i]
        assert args == [(preprocess(query), " " + preprocess(e)) for e in endings], i
        assert task.doc_to_target(docs[i]) == gold


# ---------------------------------------------------------------- winogrande


def test_winogrande_split_keeps_whole_words():
    row = sd.winogrande_row(["Kevin paid Kenneth because Kevin", "Kevin paid Kenneth because Kenneth"],
                            "was generous.", "1")  # fmt: skip
    assert row == {"sentence": "Kevin paid Kenneth because _ was generous.", "option1": "Kevin",
                   "option2": "Kenneth", "answer": "1"}  # fmt: skip
    row = sd.winogrande_row(["I fed the cat", "I fed the cats"], "'s dinner.", "2")
    assert (row["sentence"], row["option1"], row["option2"]) == ("I fed the _'s dinner.", "cat", "cats")


def test_winogrande_through_lm_eval(load_task):
    source = source_jsonl("winogrande", "winogrande_xl_dev.llmfoundry.jsonl")
    labels = (sd.SHARED_DATA / "winogrande" / "dev-labels.lst").read_text().split()
    task = load_task("winogrande")
    docs = list(task.eval_docs)
    assert list(task.eval_docs.features) == ["sentence", "option1", "option2", "answer"]
    assert task.eval_docs.features["answer"].dtype == "string"
    assert len(docs) == len(source) == len(labels) == 1267
    for i, (doc, src) in enumerate(zip(docs, source)):
        assert doc["answer"] == labels[i] and type(doc["answer"]) is str, i
        assert doc["sentence"].count("_") == 1, i
        assert doc["option1"][:1].isalnum() and doc["option2"][:1].isalnum(), i
        assert task.doc_to_text(doc) == src["gold"], i  # the gold context index
        assert task.doc_to_choice(doc) == src["context_options"], i
        assert task.doc_to_target(doc) == src["continuation"], i
    ids = sample(len(docs), 4)
    for i, args in sampled_requests(task, ids).items():
        src = source[i]
        assert args == [(c, " " + src["continuation"]) for c in src["context_options"]], i


# ---------------------------------------------------------------- ARC


@pytest.mark.parametrize(
    "name, file, padded",
    [
        ("arc_easy", "arc_easy_test.llmfoundry.jsonl", [93, 328, 560, 648, 1447, 1677, 1992]),
        ("arc_challenge", "arc_challenge_test.llmfoundry.jsonl", [121, 385, 400, 1042]),
    ],
)
def test_arc_through_lm_eval(load_task, name, file, padded):
    source = source_jsonl("arc", file)
    task = load_task(name)
    docs = list(task.eval_docs)
    assert list(task.eval_docs.features) == ["id", "question", "choices", "answerKey"]
    assert len(docs) == len(source) == sd.DATASETS[name].rows
    assert len({d["id"] for d in docs}) == len(docs)
    for i, (doc, src) in enumerate(zip(docs, source)):
        assert doc["choices"]["label"] == ["A", "B", "C", "D"], i
        assert task.doc_to_text(doc) == src["query"] + "\nAnswer:", i
        assert task.doc_to_choice(doc) == src["choices"], i
        assert task.doc_to_target(doc) == src["gold"], i
    # the padded 3-option rows documented in shared_data.py
    assert [i for i, s in enumerate(source) if len(set(s["choices"])) < 4] == padded
    ids = sample(len(docs), 5, always=padded)
    for i, args in sampled_requests(task, ids).items():
        src = source[i]
        assert args == [(src["query"] + "\nAnswer:", " " + c) for c in src["choices"]], i
