"""Small LongBench-E files written for the tests, in the original's jsonl format (fields input,
context, answers, length, dataset, language, all_classes, _id), laid out as `eval.py download` writes
them: DATA/THUDM/LongBench/<name>_e/test.jsonl. Each dataset gets one doc per length bucket; the
`length` field (words, as in the original) is what the buckets read, not the short context."""
import json
from pathlib import Path

from path_eval.suites import load_suite

LENGTHS = (1200, 5100, 9800)  # one doc in each of 0-4k, 4-8k, 8k+
TREC_CLASSES = ["Description", "Entity", "Abbreviation", "Human", "Location", "Numeric value"]

# Per dataset: (input, answers) of its docs, in the shape the original's rows have.
DOCS = {
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
            "answers": answers, "length": LENGTHS[index], "dataset": dataset, "language": "en",
            "all_classes": TREC_CLASSES if dataset == "trec" else None, "_id": f"{dataset}-{index:04x}"}


def write_longbench_e(data_dir: Path, datasets=None) -> Path:
    """The suite's datasets (or those named) as local files; returns data_dir."""
    for task in load_suite("longbench_e").tasks:
        if datasets is not None and task.name not in datasets:
            continue
        target = Path(data_dir) / task.data.hf_path / task.data.hf_config / f"{task.data.split}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        rows = [longbench_row(task.name, i, q, a) for i, (q, a) in enumerate(DOCS[task.name])]
        target.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return Path(data_dir)
