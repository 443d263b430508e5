"""Offline copies of the evaluation sets, laid out as a data dir that lm-eval's own tasks can read.

The harness reads ``DIR/<org>/<name>/<config>/<split>.jsonl`` (config ``default`` where the Hugging
Face dataset has none) instead of the hub: one JSON object per line with the HF dataset's field
names and types. lm-eval's task YAML and utils.py are used unchanged, with ``dataset_path: json``
and ``data_files`` pointing at these files. ``build_data_dir(out)`` writes them from the real data
in ``/work/shared/data`` (or ``$PATH_EVAL_SHARED_DATA``). Each folder there has a PROVENANCE.md
giving the source, licence and sha256. The files written, and how each differs from the hub:

``EleutherAI/wikitext_document_level/wikitext-2-raw-v1/test.jsonl`` (task ``wikitext``), 62 rows ``{"page"}``
    Built from the canonical ``wiki.test.raw`` (sha256 ``173c87a5...``). It is cut into documents
    the same way as the dataset's loading script ``wikitext_document_level.py``. The file is split on
    ``"\\n"``. A line is an article title when it starts with ``"= "`` and ends with ``" ="`` after
    stripping, with ``"= = ="``/``"= ="`` first collapsed to ``"==="``/``"=="`` so that section
    headings do not match. Each title starts a new page. A page is its lines joined with ``"\\n"``,
    and pages that are only whitespace are dropped (here only the file's leading blank line).
    The last page is always kept and ends in ``"\\n"``. The result has 62 pages, the same as the
    published test row count: the hub viewer shows 62 test rows, and lm-eval reports
    ``n-samples: 62`` for ``wikitext``. The count is 62 and not the paper's 60 articles because two
    formula lines in "Constant k filter" (`` = 1 rad / s and a nominal impedance k = `` and
    `` = 1 henry and capacitance C = ``) look like titles. That article is therefore 3 pages here
    too. Differences from the hub: none expected. The hub's validation and train splits are not
    included.

``EleutherAI/lambada_openai/default/test.jsonl`` (``lambada_openai``), 5,153 rows ``{"text"}``
    The canonical OpenAI ``lambada_test.jsonl``, byte-identical (sha256 ``4aa8d02c...``, the same
    texts as the hub). Differences: none.

``baber/piqa/default/validation.jsonl`` (``piqa``), 1,838 rows ``{"goal", "sol1", "sol2", "label"}``
    The original ``valid.jsonl`` (the file ybisk/piqa's loader reads). The label from line i of
    ``valid-labels.lst`` is written as int 0/1 (0 = sol1). Strings are kept exactly as given,
    including trailing spaces. Differences: none expected. The train and test splits are not
    included.

``Rowan/hellaswag/default/validation.jsonl`` (``hellaswag``), 10,042 rows, in the hub's order
    Rebuilt from llama.cpp's 6-line text format (klosax ``hellaswag_val_full.txt.bz2``). Line 1 is
    ``activity_label + ": " + ctx`` after llama.cpp's tag clean-up. Line 2 is the label. Lines 3-6 are
    the four (cleaned) endings. Fields:
    ``activity_label`` is the text before the first ``": "``. ``ctx_a`` is the rest. **``ctx_b`` is
    ``""``** (the hub's split point is lost). ``ctx`` equals ``ctx_a``. ``endings`` are the cleaned
    endings. ``label`` is the gold index as a string ("0"-"3"), as on the hub.
    Placeholders: ``ind`` is the row position (0..10041), not HF's original index.
    ``source_id = "unknown"``, ``split = "val"`` and ``split_type = "unknown"``.
    lm-eval's ``process_docs`` turns this into exactly ``query = preprocess(line 1)``,
    ``choices = [preprocess(e)]`` and ``gold = label``. For all but 14 rows that is the copy's text
    unchanged. In those 14 rows (2 queries and 12 endings), lm-eval's own ``preprocess`` deletes
    ``[...]`` spans or a double space that llama.cpp's cleaner left in. The hub does the same to
    them. The tests check both facts row by row. **Known differences from the hub:**
    (1) The hub's query is ``ctx_a + " " + ctx_b.capitalize()``. Here the copy's lowercase ctx_b is
    kept, so about 3,200 ActivityNet rows have e.g. ``"... roof. he"`` where the hub has
    ``"... roof. He"``. On the hub, ``capitalize()`` also lowercases the rest of ctx_b.
    (2) llama.cpp removed only ``[header]``, ``[step]``, ``[substeps]`` and ``[title]``, while
    lm-eval's regex removes every ``[...]``, so spacing around removed tags can differ slightly.
    ``ctx`` never has the raw WikiHow tags. The accuracies are for the same items and golds, but
    they are not bit-identical to the hub's.

``allenai/winogrande/winogrande_xl/validation.jsonl`` (``winogrande``), 1,267 rows ``{"sentence", "option1", "option2", "answer"}``
    Rebuilt from llm-foundry's ``{context_options, continuation, gold}`` plus the original
    ``dev-labels.lst``. ``answer`` is "1"/"2" from the label file, and the tests check it equals
    ``gold + 1`` everywhere. The text before the blank is the longest common prefix of the two
    contexts, cut back to just after the last whitespace. That way options that share leading
    characters ("Kevin"/"Kenneth", "bed"/"blanket", "cat"/"cats") stay whole words. The options
    are what follows. ``sentence = prefix + "_" + sep + continuation``, where ``sep`` is ``""``
    when the continuation starts with punctuation (``.`` ``,`` ``'`` and similar), else ``" "``.
    lm-eval's ``doc_to_choice``/``doc_to_target``/``doc_to_text`` then give exactly
    ``context_options``, ``continuation`` and ``gold`` for every row (tested).
    Known differences: where both options start with the same whole word(s), that word sits in
    the sentence rather than in option1/option2. Spacing between ``_`` and the next word is
    inferred. Neither changes lm-eval's requests. (The original dev.jsonl's ``qID`` is not in the
    HF schema either.)

``allenai/ai2_arc/ARC-Easy/test.jsonl`` (2,376 rows) and ``allenai/ai2_arc/ARC-Challenge/test.jsonl`` (1,172 rows), ``{"id", "question", "choices": {"text", "label"}, "answerKey"}``
    Rebuilt from llm-foundry's ``{query, choices, gold}``. ``question`` is the query without its
    ``"Question: "`` prefix. ``choices.text`` is llm-foundry's 4 choices, in order.
    Placeholders: ``choices.label`` is always ``["A", "B", "C", "D"]``. The hub uses "1"-"4" for
    some rows (reportedly 22 of the Challenge test rows have numeric keys). ``answerKey`` is the letter of
    ``gold``. ``id`` is ``"ARC-Easy-test-0000"``/``"ARC-Challenge-test-0000"`` (the row position)
    rather than the hub's ids such as ``Mercury_7175875``. lm-eval uses only the question, the
    choice texts and the gold index, so prompts, choices and golds equal the copy's (tested).
    Known differences: every row has exactly 4 choices. 7 Easy and 4 Challenge rows are 3-option
    originals padded with a repeated wrong choice (Easy rows 93, 328, 560, 648, 1447, 1677, 1992;
    Challenge rows 121, 385, 400, 1042). A repeated wrong choice cannot change acc/acc_norm, apart
    from exact ties in the loglikelihoods. The few 5-option originals (reportedly 3 in Challenge
    test) must have lost an option. They cannot be identified, and for them the hub scores one
    more distractor.
"""

from __future__ import annotations

import bz2
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SHARED_DATA = Path(os.environ.get("PATH_EVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))

HELLASWAG_UNKNOWN = "unknown"  # placeholder for source_id and split_type
ARC_LABELS = ("A", "B", "C", "D", "E")


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not JSON ({e})") from None


def _lines(path: Path) -> list[str]:
    """Non-empty lines of a small label file (one label per line)."""
    return [x.strip() for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


# ---------------------------------------------------------------- wikitext (document level)


def _is_article_title(line: str) -> bool:
    """True for " = Title = " lines; section headings (" = = Sec = = ", ...) are not titles."""
    collapsed = line.replace("= = =", "===").replace("= =", "==").strip()
    return collapsed.startswith("= ") and collapsed.endswith(" =")


def wikitext_pages(raw: str) -> list[str]:
    """Split a WikiText raw file into articles the way EleutherAI/wikitext_document_level does."""
    pages: list[str] = []
    current: list[str] = []
    for line in raw.split("\n"):
        if _is_article_title(line):
            page = "\n".join(current)
            if page.strip():
                pages.append(page)
            current = []
        current.append(line)
    pages.append("\n".join(current))  # the last page is kept unconditionally
    return pages


def convert_wikitext(src: Path = SHARED_DATA) -> list[dict]:
    # Text mode with universal newlines, like the loading script's open(); the file is pure LF.
    raw = (src / "wikitext2_raw" / "wiki.test.raw").read_text(encoding="utf-8")
    return [{"page": page} for page in wikitext_pages(raw)]


# ---------------------------------------------------------------- lambada_openai


def convert_lambada_openai(src: Path = SHARED_DATA) -> list[dict]:
    rows = [{"text": r["text"]} for r in _jsonl(src / "lambada_openai" / "lambada_test.jsonl")]
    return rows


# ---------------------------------------------------------------- piqa


def convert_piqa(src: Path = SHARED_DATA) -> list[dict]:
    folder = src / "piqa"
    items = list(_jsonl(folder / "valid.jsonl"))
    labels = _lines(folder / "valid-labels.lst")
    if len(items) != len(labels):
        raise ValueError(f"piqa: {len(items)} items but {len(labels)} labels")
    return [
        {"goal": it["goal"], "sol1": it["sol1"], "sol2": it["sol2"], "label": int(lab)}
        for it, lab in zip(items, labels)
    ]


# ---------------------------------------------------------------- hellaswag


def read_llamacpp_hellaswag(path: Path) -> list[tuple[str, int, list[str]]]:
    """(line 1 = activity_label + ": " + ctx, gold, 4 endings) per item of the 6-line format."""
    opener = bz2.open if path.suffix == ".bz2" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) % 6:
        raise ValueError(f"{path}: {len(lines)} lines is not a multiple of 6")
    items = []
    for i in range(0, len(lines), 6):
        query, label, endings = lines[i], lines[i + 1], lines[i + 2 : i + 6]
        if label not in ("0", "1", "2", "3"):
            raise ValueError(f"{path}:{i + 2}: bad label {label!r}")
        items.append((query, int(label), endings))
    return items


def convert_hellaswag(src: Path = SHARED_DATA) -> list[dict]:
    rows = []
    for ind, (query, gold, endings) in enumerate(
        read_llamacpp_hellaswag(src / "hellaswag" / "hellaswag_val_full.txt.bz2")
    ):
        activity_label, sep, ctx = query.partition(": ")
        if not sep:
            raise ValueError(f"hellaswag item {ind}: no ': ' after the activity label")
        rows.append(
            {
                "ind": ind,  # placeholder: row position, not HF's original index
                "activity_label": activity_label,
                "ctx_a": ctx,
                # ctx_b = "" keeps lm-eval's ctx_b.capitalize() from touching the copy's text
                "ctx_b": "",
                "ctx": ctx,
                "endings": list(endings),
                "source_id": HELLASWAG_UNKNOWN,
                "split": "val",
                "split_type": HELLASWAG_UNKNOWN,
                "label": str(gold),
            }
        )
    return rows


# ---------------------------------------------------------------- winogrande


def _common_prefix_len(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


_NO_SPACE_BEFORE = tuple(".,;:!?'\u2019)")


def winogrande_row(context_options: list[str], continuation: str, answer: str) -> dict:
    """Rebuild {sentence, option1, option2, answer} from lm-eval's partial-evaluation form."""
    first, second = context_options
    cut = _common_prefix_len(first, second)
    while cut > 0 and not first[cut - 1].isspace():  # keep options whole words
        cut -= 1
    prefix, option1, option2 = first[:cut], first[cut:], second[cut:]
    if "_" in prefix:
        raise ValueError(f"winogrande: '_' before the blank in {first!r}")
    sep = "" if (not continuation or continuation.startswith(_NO_SPACE_BEFORE)) else " "
    return {
        "sentence": prefix + "_" + sep + continuation,
        "option1": option1,
        "option2": option2,
        "answer": answer,
    }


def convert_winogrande(src: Path = SHARED_DATA) -> list[dict]:
    folder = src / "winogrande"
    items = list(_jsonl(folder / "winogrande_xl_dev.llmfoundry.jsonl"))
    answers = _lines(folder / "dev-labels.lst")
    if len(items) != len(answers):
        raise ValueError(f"winogrande: {len(items)} items but {len(answers)} labels")
    rows = []
    for i, (it, answer) in enumerate(zip(items, answers)):
        if answer not in ("1", "2") or int(answer) - 1 != it["gold"]:
            raise ValueError(f"winogrande row {i}: label {answer!r} vs gold {it['gold']}")
        rows.append(winogrande_row(it["context_options"], it["continuation"], answer))
    return rows


# ---------------------------------------------------------------- ARC


ARC_PREFIX = "Question: "


def _convert_arc(src: Path, file: str, config: str) -> list[dict]:
    rows = []
    for i, it in enumerate(_jsonl(src / "arc" / file)):
        query, choices, gold = it["query"], it["choices"], it["gold"]
        if not query.startswith(ARC_PREFIX):
            raise ValueError(f"{file} row {i}: query lacks {ARC_PREFIX!r}")
        labels = list(ARC_LABELS[: len(choices)])
        rows.append(
            {
                "id": f"{config}-test-{i:04d}",  # placeholder
                "question": query[len(ARC_PREFIX) :],
                "choices": {"text": list(choices), "label": labels},
                "answerKey": labels[gold],
            }
        )
    return rows


def convert_arc_easy(src: Path = SHARED_DATA) -> list[dict]:
    return _convert_arc(src, "arc_easy_test.llmfoundry.jsonl", "ARC-Easy")


def convert_arc_challenge(src: Path = SHARED_DATA) -> list[dict]:
    return _convert_arc(src, "arc_challenge_test.llmfoundry.jsonl", "ARC-Challenge")


def convert_squad_v2(src: Path = SHARED_DATA) -> list[dict]:
    """The official-format SQuAD v2 dev subset as Hugging Face ``rajpurkar/squad_v2`` rows (one per
    question, in file order; unanswerable questions have empty answer lists)."""
    data = json.loads((src / "squad_v2" / "dev-v2.0.subset_Normans_Rhine.json").read_text(encoding="utf-8"))
    return [{"id": qa["id"], "title": article["title"], "context": paragraph["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]], "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for article in data["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def convert_hotpotqa(src: Path = SHARED_DATA) -> list[dict]:
    """The first 100 HotpotQA dev-distractor records, already in the Hugging Face layout."""
    return json.loads((src / "hotpotqa" / "hotpot_dev_distractor_first100.hf_style.json").read_text(encoding="utf-8"))


def copy_essays(out: Path, src: Path = SHARED_DATA) -> Path:
    """The Paul Graham essays as DIR/paul_graham_essays/*.txt (RULER's essay haystack)."""
    target = Path(out) / "paul_graham_essays"
    target.mkdir(parents=True, exist_ok=True)
    for essay in sorted((src / "paul_graham_essays" / "PaulGrahamEssays").glob("*.txt")):
        (target / essay.name).write_bytes(essay.read_bytes())
    return target


# ---------------------------------------------------------------- the data dir


@dataclass(frozen=True)
class SharedDataset:
    task: str  # the lm-eval task (or RULER task) that reads it
    path: str  # HF dataset path (org/name)
    config: str  # HF config name, "default" where there is none
    split: str
    rows: int  # expected row count
    convert: Callable[[Path], list[dict]]

    @property
    def relpath(self) -> str:
        return f"{self.path}/{self.config}/{self.split}.jsonl"


DATASETS: dict[str, SharedDataset] = {
    d.task: d
    for d in (
        SharedDataset("wikitext", "EleutherAI/wikitext_document_level", "wikitext-2-raw-v1", "test", 62, convert_wikitext),
        SharedDataset("lambada_openai", "EleutherAI/lambada_openai", "default", "test", 5153, convert_lambada_openai),
        SharedDataset("piqa", "baber/piqa", "default", "validation", 1838, convert_piqa),
        SharedDataset("hellaswag", "Rowan/hellaswag", "default", "validation", 10042, convert_hellaswag),
        SharedDataset("winogrande", "allenai/winogrande", "winogrande_xl", "validation", 1267, convert_winogrande),
        SharedDataset("arc_easy", "allenai/ai2_arc", "ARC-Easy", "test", 2376, convert_arc_easy),
        SharedDataset("arc_challenge", "allenai/ai2_arc", "ARC-Challenge", "test", 1172, convert_arc_challenge),
        SharedDataset("ruler_qa_1", "rajpurkar/squad_v2", "squad_v2", "validation", 706, convert_squad_v2),
        SharedDataset("ruler_qa_2", "hotpotqa/hotpot_qa", "distractor", "validation", 100, convert_hotpotqa),
    )
}


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    """One ``json.dumps`` object per line (ASCII-escaped, as the canonical LAMBADA file is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
            n += 1
    tmp.replace(path)
    return n


def build_data_dir(out: Path, datasets: list[str] | None = None, src: Path = SHARED_DATA) -> Path:
    """Write DIR/<org>/<name>/<config>/<split>.jsonl for the named tasks (default: all of them)."""
    out = Path(out)
    names = list(DATASETS) if datasets is None else list(datasets)
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise KeyError(f"unknown dataset(s) {unknown}; known: {sorted(DATASETS)}")
    for name in names:
        spec = DATASETS[name]
        rows = spec.convert(Path(src))
        if len(rows) != spec.rows:
            raise ValueError(f"{name}: {len(rows)} rows, expected {spec.rows}")
        write_jsonl(out / spec.relpath, rows)
    return out
