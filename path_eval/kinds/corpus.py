"""The `corpus` kind: a text corpus (`corpus: {...}`) cut into blocks of each length and scored for
perplexity by token position (the paper's Figure 3; path_eval/tasks/extrapolation.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, model_validator

from path_eval.errors import PathEvalError
from path_eval.kinds.base import Kind, Planning, PlannedFields, SamplePairs, one_log_per_length

if TYPE_CHECKING:
    from path_eval.suites import TaskSpec


class CorpusSpec(BaseModel):
    """A text corpus for per-position perplexity: exactly one source.

    hf_path (+ hf_config, split, field, dedupe, max_docs): a Hugging Face dataset, read from the
    data dir; `field` may be dotted ("document.text"); `dedupe` drops rows whose (dotted) field
    repeats (NarrativeQA lists each story once per question). folder: *.txt files under the data
    dir (sorted by name), optionally without Project Gutenberg headers and footers. python_stdlib:
    the `.py` sources of the running Python's standard library (sorted by path), a code corpus
    present on every machine. package_file: a text file shipped inside the `path_eval` package (a
    path relative to it, e.g. the zoo's held-out text), read through importlib.resources, so an
    installed wheel needs no data dir. `standin_for` names the corpus an offline stand-in replaces."""

    model_config = ConfigDict(extra="forbid")
    hf_path: str | None = None
    hf_config: str | None = None
    split: str = "test"
    field: str = "text"
    dedupe: str | None = None
    max_docs: int | None = None
    folder: str | None = None
    strip_gutenberg: bool = False
    python_stdlib: bool = False
    package_file: str | None = None
    standin_for: str | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if sum([self.hf_path is not None, self.folder is not None, self.python_stdlib,
                self.package_file is not None]) != 1:
            raise ValueError("a corpus needs exactly one of hf_path, folder, python_stdlib, package_file")
        return self


def check_block(task: TaskSpec, length: int) -> None:
    if length < 2:
        raise PathEvalError(f"task {task.name}: a block of {length} token(s) has nothing to predict: give a "
                            "longer --lengths (e.g. 4k)")


def plan(task: TaskSpec, length: int | None, planning: Planning) -> PlannedFields:
    from path_eval.tasks.extrapolation import documents

    return PlannedFields(data_files=documents(task.options, planning.data_dir, planning.suite.command_name)[1])


def describe(task: TaskSpec) -> str:
    corpus = task.options
    return "corpus " + (corpus.hf_path or corpus.folder or corpus.package_file or "python stdlib")


def splits(task: TaskSpec, suite, lengths) -> list:
    from path_eval.tasks.extrapolation import corpus_split

    return [corpus_split(task.options)] if task.options.hf_path else []


KIND = Kind(name="corpus", key="corpus", options=CorpusSpec, evaluator="path_eval.evaluators.corpus:CorpusEvaluator",
            describe=describe, plan=plan, log_names=one_log_per_length, context=lambda length: length,
            check_length=check_block, splits=splits,
            pairing=SamplePairs(key=lambda row: row["tokens_sha256"], numerator=lambda row: sum(row["nll_sum"]),
                                denominator=lambda row: sum(row["count"]), exponential=True))
