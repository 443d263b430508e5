"""The kinds of task: one module per kind (lm_eval.py, generated.py, corpus.py, flipflop.py), each
holding everything that differs between kinds as one `Kind` row (base.py): its options (the suite
key naming the kind and the pydantic model or str it holds), its rules (checks, lengths, the context
its items need, what the plan records, log names, how `compare` pairs its samples), its download
splits, what `rescore` scores again, the settings the protocol check compares, and where its
evaluator is. `registry.py` collects them into `KINDS`; a new kind is a module with its row, passed
to `register` (docs/extending.md).

The package sits below every stage that reads it (suites, plan, results, reports, the command line);
its rules import the task modules they call when they run, and name their evaluator by module path,
imported by the runner above them (docs/architecture.md)."""
from path_eval.kinds.base import (Kind, Planning, PlannedFields, SamplePairs, length_log_name, lm_eval_log_names,
                                  one_log_per_length, sample_count)
from path_eval.kinds.registry import KINDS, kind_of_key, register

__all__ = ["KINDS", "Kind", "Planning", "PlannedFields", "SamplePairs", "kind_of_key", "length_log_name",
           "lm_eval_log_names", "one_log_per_length", "register", "sample_count"]
