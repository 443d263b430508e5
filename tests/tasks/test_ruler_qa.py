"""RULER qa_1 (SQuAD v2 dev) and qa_2 (HotpotQA dev distractor) against NVIDIA/RULER's definition:
scripts/data/synthetic/constants.py (template and answer prefix, copied here literally) and
scripts/data/synthetic/qa.py (documents, answerable questions in file order, gold and same-article
paragraphs first, document numbering, repetition past the set, length fitting), on the partial dev
copies in shared/data, with the real Mistral v1 tokenizer."""
from __future__ import annotations

import json
import re

import pytest

from path_eval.errors import PathEvalError
from path_eval.tasks.ruler.qa import generate_qa, load_hotpotqa, load_squad
from tests.helpers import tokens
from tests.shared_data import SHARED_DATA

SQUAD = SHARED_DATA / "squad_v2" / "dev-v2.0.subset_Normans_Rhine.json"
HOTPOT = SHARED_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.first53.json"
HOTPOT_HF = SHARED_DATA / "hotpotqa" / "hotpot_dev_distractor_first100.hf_style.json"
# The official layouts of the dev copies, whole articles and their counts (the fixtures hold HF rows only;
# the QA generators run on those in tests/suites/test_generated_suites.py and the golden records).
pytestmark = pytest.mark.shared_data

LENGTH = 4096
NUM_SAMPLES = 3
SEED = 2
NEW_TOKENS = 32
INSTRUCTION = ("Answer the question based on the given documents. "
               "Only give me the answer and do not output any other words.")
HEAD = INSTRUCTION + "\n\nThe following are given documents.\n\n"
TAIL = "\n\n" + INSTRUCTION + "\n\nQuestion: "
PREFIX = " Answer:"


@pytest.fixture(scope="module")
def squad_raw():
    return json.loads(SQUAD.read_text(encoding="utf-8"))["data"]


@pytest.fixture(scope="module")
def hotpot_raw():
    return json.loads(HOTPOT.read_text(encoding="utf-8"))


def documents_and_question(text: str) -> tuple[list[str], str]:
    """The numbered documents ("Document {i}:\\n{text}", blank line between) and the question."""
    assert text.startswith(HEAD) and text.count(TAIL) == 1
    context, question = text[len(HEAD):].split(TAIL)
    parts = re.split(r"(?:^|\n\n)Document (\d+):\n", context)
    assert parts[0] == ""
    assert parts[1::2] == [str(i) for i in range(1, len(parts) // 2 + 1)]
    return parts[2::2], question


def test_squad_loader_keeps_answerable_questions_and_distinct_paragraphs(squad_raw):
    qa_set = load_squad(SQUAD)
    answerable = [(qa["question"], [a["text"] for a in qa["answers"]], p["context"])
                  for article in squad_raw for p in article["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]]
    assert [(q.query, q.answers, qa_set.documents[q.gold[0]]) for q in qa_set.questions] == answerable
    assert qa_set.documents == sorted({p["context"] for a in squad_raw for p in a["paragraphs"]})


def test_hotpot_loader_reads_the_official_and_the_hugging_face_layouts(hotpot_raw):
    official, hugging_face = load_hotpotqa(HOTPOT), load_hotpotqa(HOTPOT_HF)
    assert len(official.questions) == len(hotpot_raw) == 53
    for record, question in zip(hotpot_raw, official.questions):
        assert question.query == record["question"] and question.answers == [record["answer"]]
        assert [official.documents[i] for i in question.gold] == [f"{t}\n{''.join(s)}" for t, s in record["context"]]
    for a, b in zip(official.questions, hugging_face.questions):
        assert (a.query, a.answers) == (b.query, b.answers)
        assert [official.documents[i] for i in a.gold] == [hugging_face.documents[i] for i in b.gold]


def test_squad_samples_ask_questions_in_order_with_gold_and_same_article_paragraphs(tokenizer, squad_raw):
    samples = generate_qa("squad", LENGTH, tokenizer, SEED, NUM_SAMPLES, SQUAD)
    answerable = [(qa, p["context"], [q["context"] for q in article["paragraphs"]])
                  for article in squad_raw for p in article["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]]
    for sample, (qa, gold, article) in zip(samples, answerable):
        documents, question = documents_and_question(sample.input)
        assert question == qa["question"]
        assert sample.outputs == [a["text"] for a in qa["answers"]]
        assert sample.answer_prefix == PREFIX and sample.max_new_tokens == NEW_TOKENS
        assert gold in documents and len(set(documents)) == len(documents) == sample.extra["haystack_size"]
        # fewer documents than the article has: the rest are its other paragraphs
        assert len(documents) < len(article) and set(documents) <= set(article)


def test_hotpot_samples_hold_all_ten_paragraphs_of_their_question(tokenizer, hotpot_raw):
    samples = generate_qa("hotpotqa", LENGTH, tokenizer, SEED, NUM_SAMPLES, HOTPOT)
    every = {f"{t}\n{''.join(s)}" for record in hotpot_raw for t, s in record["context"]}
    for sample, record in zip(samples, hotpot_raw):
        documents, question = documents_and_question(sample.input)
        assert question == record["question"] and sample.outputs == [record["answer"]]
        assert {f"{t}\n{''.join(s)}" for t, s in record["context"]} <= set(documents) <= every
        assert len(set(documents)) == len(documents) == sample.extra["haystack_size"]


def test_gold_sits_at_the_same_place_for_equal_document_counts_as_the_original(tokenizer):
    """The original shuffles with a fresh random.Random(seed), so only the list length matters."""
    qa_set = load_squad(SQUAD)
    places = {}
    for sample, question in zip(generate_qa("squad", LENGTH, tokenizer, SEED, 8, SQUAD), qa_set.questions):
        documents, _ = documents_and_question(sample.input)
        places.setdefault(len(documents), set()).add(documents.index(qa_set.documents[question.gold[0]]))
    assert all(len(p) == 1 for p in places.values())


def test_lengths_fit_the_budget(tokenizer):
    for dataset, path in (("squad", SQUAD), ("hotpotqa", HOTPOT)):
        samples = generate_qa(dataset, LENGTH, tokenizer, SEED, NUM_SAMPLES, path)
        per_document = max(tokens(tokenizer, d) for s in samples for d in documents_and_question(s.input)[0])
        for sample in samples:
            assert sample.length == tokens(tokenizer, sample.input + sample.answer_prefix) + NEW_TOKENS
            assert sample.length <= LENGTH
            # the search's count, or 10 documents (one step) fewer per long draw
            assert LENGTH - sample.length < 20 * per_document


def test_past_the_set_documents_repeat_as_the_original(tokenizer):
    qa_set = load_squad(SQUAD)
    with pytest.warns(UserWarning, match="repeated"):
        (sample,) = generate_qa("squad", 24576, tokenizer, SEED, 1, SQUAD)
    documents, _ = documents_and_question(sample.input)
    assert len(documents) > len(qa_set.documents) and set(documents) == set(qa_set.documents)
    assert sample.length <= 24576


def test_same_arguments_same_samples_other_seed_other_samples(tokenizer):
    first = generate_qa("squad", LENGTH, tokenizer, SEED, NUM_SAMPLES, SQUAD)
    again = generate_qa("squad", LENGTH, tokenizer, SEED, NUM_SAMPLES, SQUAD)
    assert [s.to_json() for s in again] == [s.to_json() for s in first]
    other = generate_qa("squad", LENGTH, tokenizer, SEED + 1, NUM_SAMPLES, SQUAD)
    assert [s.input for s in other] != [s.input for s in first]


def test_missing_or_wrong_data_is_a_user_error(tokenizer, tmp_path):
    with pytest.raises(PathEvalError, match="dev-v2.0.json"):
        generate_qa("squad", LENGTH, tokenizer, SEED, 1, tmp_path / "squad.json")
    with pytest.raises(PathEvalError, match="official SQuAD v2 format"):
        generate_qa("squad", LENGTH, tokenizer, SEED, 1, HOTPOT)
    with pytest.raises(PathEvalError, match="HotpotQA"):
        generate_qa("hotpotqa", LENGTH, tokenizer, SEED, 1, SQUAD)
    with pytest.raises(PathEvalError, match="fewer than the 54 samples"):
        generate_qa("hotpotqa", LENGTH, tokenizer, SEED, 54, HOTPOT)
    with pytest.raises(PathEvalError, match="squad, hotpotqa"):
        generate_qa("nq", LENGTH, tokenizer, SEED, 1, SQUAD)
