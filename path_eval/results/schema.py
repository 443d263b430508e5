"""The results.json format: a JSON list of `ResultRecord`s, each carrying the `schema_version` of
its format. The version lives in every record, not around the list, because records travel alone:
a baseline gathers records from several runs, a result file embeds them beside its own fields, and
every reader of the plain list keeps working."""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel

# 1: records written before the field existed (read as they are: every later field has a default);
# 2: `schema_version`, and the model's source and hub revision in the provenance.
SCHEMA_VERSION = 2


# How `ser_json_inf_nan="strings"` writes the numbers JSON lacks; no other string is a number here.
NON_FINITE_AS_WRITTEN = ("NaN", "Infinity", "-Infinity")


def _a_number(value):
    """A stored number as the writer writes it: `true` or "0.5" would otherwise pass as 1.0 and 0.5."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or \
            (isinstance(value, str) and value not in NON_FINITE_AS_WRITTEN):
        raise ValueError(f"{value!r:.40} is not a number")
    return value


StoredNumber = Annotated[float, BeforeValidator(_a_number)]


class Provenance(BaseModel):
    """Everything needed to say whether two numbers are comparable and to reproduce one."""

    model_config = ConfigDict(extra="forbid")
    model_path: str
    model_type: str
    variant: str | None
    config_sha256: str
    weights_sha256: str
    tokenizer: str
    tokenizer_sha256: str
    data_fingerprint: str | None
    data_files: list[str]
    seed: int
    limit: int | None
    num_fewshot: int
    max_length: int
    dtype: str
    device: str
    attention_backend: str | None
    # how generate_until decoded: "cuda graph" or "eager" for path-eval's models, None for a transformers
    # model (its own generate) or a record written before the field existed
    decoding: str | None = None
    batch_size: int
    harness_version: str
    git_revision: str | None
    lm_eval_version: str
    torch_version: str
    transformers_version: str
    python_version: str
    hostname: str
    started_at: str
    wall_time_s: float
    tokens: int
    tokens_per_second: float | None
    truncated_requests: int
    requests_computed: int
    processes: int = 1  # data-parallel processes (accelerate launch)
    truncate_middle: int | None = None  # prompts cut to their first and last halves of this many tokens
    model_source: str | None = None  # as given: a folder, zoo:NAME, or a hub id org/name[@revision]
    model_revision: str | None = None  # a hub model: the commit its snapshot holds
    # BABILong: where the rows come from (hub | regenerated), the sample set (1k | 100), the prompt parts on
    data_source: str | None = None
    sample_set: str | None = None
    prompt_parts: list[str] | None = None
    longbench_rule: str | None = None  # the suite's LongBench scoring rule (fox, thudm) of a LongBench task
    # --apply-chat-template: the template's name among the tokenizer's and the sha256 of its text, the
    # system instruction, lm-eval's few-shot examples as turns (None, None, None, False: no template)
    chat_template: str | None = None
    chat_template_sha256: str | None = None
    system_instruction: str | None = None
    fewshot_as_multiturn: bool = False
    # a code task: its programs ran in the sandbox, as --allow-code-execution allowed (None: no code task)
    allow_code_execution: bool | None = None


class ResultRecord(BaseModel):
    # A metric can be NaN or infinite (perplexity of a diverged model): JSON has no such numbers, and
    # pydantic's default writes null, which the record then refuses to read back.
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")
    schema_version: int = Field(SCHEMA_VERSION, ge=1, strict=True, description="the results format this record follows; "
                                "absent in records of version 1")
    suite: str
    model: str
    task: str
    length: int | None
    bucket: list[int] | None = None  # [first, last] token position, for per-position perplexity
    length_bucket: str | None = None  # the suite's length bucket of the docs averaged (LongBench-E: "4-8k")
    metric: str
    value: StoredNumber
    stderr: StoredNumber | None
    n: int
    higher_is_better: bool
    provenance: Provenance
    seeds: int | None = None  # a task run under several seeds: value is their mean,
    seed_std: float | None = None  # seed_std the standard deviation of the per-seed values
    # Rows made here rather than read from the benchmark's published set: "regenerated" (part of the
    # record's key: reports never put it in the cell of a record of the published rows).
    data_source: str | None = None


class RunResults(RootModel[list[ResultRecord]]):
    pass
