"""RULER `qa_1` (SQuAD v2 dev) and `qa_2` (HotpotQA dev distractor), as NVIDIA/RULER
scripts/data/synthetic/qa.py.

Documents are the dev set's distinct paragraphs, sorted (HotpotQA: "{title}\\n{sentences joined}").
Sample i asks question i of the set (SQuAD: answerable questions only, in file order) with its
gold paragraph(s) (HotpotQA: all 10 of the question's paragraphs), then the other paragraphs of
the same article (SQuAD), then random other documents, up to the fitted count; the list is shuffled
with a fresh `random.Random(seed)`, so at one document count the gold paragraph sits at the same
place in every sample, as in the original. Where the count reaches the number of distinct
documents, the original repeats the whole sorted set instead: kept, with a warning, since only the
small partial dev copies can get there below 128K tokens.

The original's global `random` (seeded with the seed) is one `random.Random(seed)` per call here,
drawn in the same order, so the same data and tokenizer give the original's samples.
"""
from __future__ import annotations

import json
import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.common import RulerSample, Tokenizer, count_tokens, first_fitting, searched_size, unwrapped
from path_eval.tasks.ruler.templates import QA, QA_DOCUMENT_PROMPT

QA_STEP = 10

SOURCES = {
    "squad": "SQuAD v2.0 dev (https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json)",
    "hotpotqa": "HotpotQA dev distractor (http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json)",
}


@dataclass(frozen=True)
class QaQuestion:
    query: str
    answers: list[str]
    gold: list[int]  # indices into QaSet.documents
    same_article: list[int]  # SQuAD: the article's other paragraphs, taken before random documents


@dataclass(frozen=True)
class QaSet:
    questions: list[QaQuestion]
    documents: list[str]  # distinct, sorted


def _read_json(path: Path, dataset: str):
    """The official json, or a Hugging Face split saved as JSON lines (`eval.py download`): a list."""
    if not Path(path).is_file():
        raise PathEvalError(f"{path} is not a file: RULER's {dataset} task needs the {SOURCES[dataset]} json there")
    text = Path(path).read_text(encoding="utf-8")
    try:
        if Path(path).suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise PathEvalError(f"{path} is not JSON ({error}): download the {SOURCES[dataset]} again") from None


def squad_from_rows(rows: list[dict]) -> dict:
    """Hugging Face `rajpurkar/squad_v2` rows (one per question, in the official file's order) back
    into the official nesting: consecutive rows of one title are an article, consecutive rows of
    one context a paragraph; a question with no answer text is unanswerable."""
    articles: list[dict] = []
    for row in rows:
        if not articles or articles[-1]["title"] != row["title"]:
            articles.append({"title": row["title"], "paragraphs": []})
        paragraphs = articles[-1]["paragraphs"]
        if not paragraphs or paragraphs[-1]["context"] != row["context"]:
            paragraphs.append({"context": row["context"], "qas": []})
        texts = row["answers"]["text"]
        paragraphs[-1]["qas"].append({"question": row["question"], "answers": [{"text": t} for t in texts],
                                      "is_impossible": not texts})
    return {"data": articles}


def load_squad(path: Path) -> QaSet:
    """The official SQuAD v2 json ({"data": [{"paragraphs": [{"context", "qas"}]}]}) or the
    Hugging Face rows of its validation split."""
    data = _read_json(path, "squad")
    if isinstance(data, list) and data and all(isinstance(r, dict) and {"title", "context", "question", "answers"} <= r.keys()
                                               for r in data):
        data = squad_from_rows(data)
    if not isinstance(data, dict) or "data" not in data:
        raise PathEvalError(f"{path} is not in the official SQuAD v2 format: use {SOURCES['squad']}")
    articles = [article["paragraphs"] for article in data["data"]]
    documents = sorted({paragraph["context"] for paragraphs in articles for paragraph in paragraphs})
    index = {document: i for i, document in enumerate(documents)}
    questions = []
    for paragraphs in articles:
        article = [index[paragraph["context"]] for paragraph in paragraphs]
        for paragraph in paragraphs:
            gold = index[paragraph["context"]]
            questions.extend(
                QaQuestion(query=qa["question"], answers=[answer["text"] for answer in qa["answers"]], gold=[gold],
                           same_article=[i for i in article if i != gold])
                for qa in paragraph["qas"] if not qa["is_impossible"])
    return QaSet(questions, documents)


def _hotpot_paragraphs(record: dict) -> list[tuple[str, list[str]]]:
    """(title, sentences) pairs from the official layout ([[title, sentences], ...]) or the
    Hugging Face one ({"title": [...], "sentences": [...]})."""
    context = record["context"]
    if isinstance(context, dict):
        return list(zip(context["title"], context["sentences"]))
    return [(title, sentences) for title, sentences in context]


def load_hotpotqa(path: Path) -> QaSet:
    """The HotpotQA dev distractor json: a list of records, official or Hugging Face layout."""
    data = _read_json(path, "hotpotqa")
    if not isinstance(data, list) or not all(isinstance(r, dict) and "context" in r for r in data):
        raise PathEvalError(f"{path} is not a HotpotQA json list of records: use {SOURCES['hotpotqa']}")
    paragraphs = [[f"{title}\n{''.join(sentences)}" for title, sentences in _hotpot_paragraphs(r)] for r in data]
    documents = sorted({document for record in paragraphs for document in record})
    index = {document: i for i, document in enumerate(documents)}
    questions = [QaQuestion(query=record["question"], answers=[record["answer"]],
                            gold=[index[document] for document in own], same_article=[])
                 for record, own in zip(data, paragraphs)]
    return QaSet(questions, documents)


LOADERS = {"squad": load_squad, "hotpotqa": load_hotpotqa}


def _chosen_documents(qa_set: QaSet, question: QaQuestion, num_docs: int, rng: random.Random) -> list[str]:
    """The question's documents for a `num_docs` haystack, before shuffling."""
    documents = qa_set.documents
    if num_docs >= len(documents):  # the original's fallback: the whole sorted set, repeated
        return (documents * -(-num_docs // len(documents)))[:num_docs]
    own = question.gold + question.same_article
    if num_docs - len(question.gold) > len(question.same_article):
        taken = set(own)
        others = [i for i in range(len(documents)) if i not in taken]
        chosen = own + rng.sample(others, num_docs - len(own))
    else:
        chosen = question.gold + rng.sample(question.same_article, num_docs - len(question.gold))
    return [documents[i] for i in chosen]


def _prompt(qa_set: QaSet, question: QaQuestion, num_docs: int, rng: random.Random, seed: int,
            layout: Callable[[str], str]) -> str:
    """Prompt laid out by `layout`, with answer prefix (the original formats and counts them together)."""
    chosen = _chosen_documents(qa_set, question, num_docs, rng)
    random.Random(seed).shuffle(chosen)
    context = "\n\n".join(QA_DOCUMENT_PROMPT.format(i=i + 1, document=document) for i, document in enumerate(chosen))
    return layout(QA.template.format(context=context, query=question.query)) + QA.answer_prefix


def generate_qa(dataset: str, length: int, tokenizer: Tokenizer, seed: int, num_samples: int,
                documents_path: Path, layout: Callable[[str], str] = unwrapped) -> list[RulerSample]:
    """`num_samples` samples of qa_1 (dataset "squad") or qa_2 ("hotpotqa") whose prompt (laid out by
    `layout`, answer prefix included) plus 32 generated tokens fit `length` tokens, from the dev json at
    `documents_path`; outputs are the question's answers."""
    if dataset not in LOADERS:
        raise PathEvalError(f"unknown RULER QA dataset {dataset!r}: use one of {', '.join(LOADERS)}")
    qa_set = LOADERS[dataset](documents_path)
    if num_samples > len(qa_set.questions):
        raise PathEvalError(f"{documents_path} has {len(qa_set.questions)} usable questions, fewer than the "
                            f"{num_samples} samples asked: use the full {SOURCES[dataset]} or fewer samples")
    rng = random.Random(seed)
    budget = length - QA.tokens_to_generate

    def prompt_tokens(prompt: str) -> int:
        return count_tokens(tokenizer, prompt)

    def first_question(num_docs: int) -> str:
        return _prompt(qa_set, qa_set.questions[0], num_docs, rng, seed, layout)

    tokens_per_document = prompt_tokens(first_question(QA_STEP)) / QA_STEP
    upper = max(int((length / tokens_per_document) * 3), QA_STEP * 2)
    size = searched_size(lambda num_docs: prompt_tokens(first_question(num_docs)) <= budget, QA_STEP, upper)
    if size >= len(qa_set.documents):
        warnings.warn(f"{length} tokens need {size} documents but {documents_path} has only "
                      f"{len(qa_set.documents)}: they are repeated, as RULER does; use the full {SOURCES[dataset]}",
                      stacklevel=2)

    samples = []
    for index, question in enumerate(qa_set.questions[:num_samples]):
        def draw(num_docs: int) -> str:
            return _prompt(qa_set, question, num_docs, rng, seed, layout)

        prompt, tokens, used = first_fitting(draw, prompt_tokens, size, QA_STEP, budget)
        samples.append(RulerSample(index=index, input=prompt[: -len(QA.answer_prefix)], outputs=question.answers,
                                   answer_prefix=QA.answer_prefix, max_new_tokens=QA.tokens_to_generate,
                                   length=tokens + QA.tokens_to_generate, extra={"haystack_size": used}))
    return samples
