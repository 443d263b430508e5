"""Which evaluator runs each kind of task (path_eval/kinds.py): one per kind, keyed by the kind's
name. The runner runs them in the kinds' order.

- `LmEvalEvaluator` (lm_eval.py): tasks lm-eval defines, adapted where the suite says;
- `GeneratedEvaluator` (generated.py): RULER and PhoneBook samples, frozen, then evaluated by lm-eval;
- `CorpusEvaluator` (corpus.py): per-position perplexity of corpora;
- `FlipFlopEvaluator` (flipflop.py): frozen flip-flop sequences, one forward each."""
from __future__ import annotations

from path_eval.evaluators.corpus import CorpusEvaluator
from path_eval.evaluators.flipflop import FlipFlopEvaluator
from path_eval.evaluators.generated import GeneratedEvaluator
from path_eval.evaluators.interface import Evaluator
from path_eval.evaluators.lm_eval import LmEvalEvaluator

EVALUATORS: dict[str, Evaluator] = {"lm_eval": LmEvalEvaluator(), "generated": GeneratedEvaluator(),
                                    "corpus": CorpusEvaluator(), "flipflop": FlipFlopEvaluator()}
