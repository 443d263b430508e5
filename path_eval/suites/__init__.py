"""Suites are data: `suites/<name>.yaml`. The pydantic models they are validated into are in
schema.py, reading them (by name or path, with `extends:` and `include:`) in loader.py."""
from path_eval.suites.loader import available_suites, load_suite
from path_eval.suites.schema import (BabilongOptions, LengthBuckets, PromptEdit, SuiteSpec, TaskSpec,
                                     parse_length, parse_lengths)

__all__ = ["BabilongOptions", "LengthBuckets", "PromptEdit", "SuiteSpec", "TaskSpec", "available_suites",
           "load_suite", "parse_length", "parse_lengths"]
