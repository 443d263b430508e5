"""The evaluator of each kind of task, as the kind's row names it (`Kind.evaluator`, "module:Class",
path_eval/kinds/): imported here on first use and made once. The rows name their evaluators by
module path rather than holding them because the kinds sit below the suites that read them, and
the evaluators (torch, lm-eval) above the plan; importing an evaluator from a row would turn the
layers upside down (docs/architecture.md).

The built-in kinds' evaluators, each behind the interface of interface.py:
- `LmEvalEvaluator` (lm_eval.py): tasks lm-eval defines, adapted where the suite says;
- `GeneratedEvaluator` (generated.py): RULER and PhoneBook samples, frozen, then evaluated by lm-eval;
- `CorpusEvaluator` (corpus.py): per-position perplexity of corpora;
- `FlipFlopEvaluator` (flipflop.py): frozen flip-flop sequences, one forward each."""
from __future__ import annotations

import importlib
from functools import cache

from path_eval.evaluators.interface import Evaluator
from path_eval.kinds import Kind


def evaluator_of(kind: Kind) -> Evaluator:
    """The evaluator that runs the kind's items."""
    return _made(kind.evaluator)


@cache
def _made(where: str) -> Evaluator:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)()
