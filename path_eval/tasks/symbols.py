"""The symbol vocabularies of the synthetic tasks whose models are trained on them alone (flip-flop,
the A5 word problem, MQRAR-N): the sequences are token ids, one per symbol, so a model is only
scored on them when its tokenizer gives each symbol the id the sequences use for it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from path_eval.errors import PathEvalError


@dataclass(frozen=True)
class SymbolVocabulary:
    """`symbols[i]` is the token of id i; `task` names the task family in messages."""

    task: str
    symbols: tuple[str, ...]

    def used_by(self, token_id: Callable[[str], int | None]) -> bool:
        """Whether a tokenizer (`token_id`: token -> its id) gives each symbol its id here."""
        return all(token_id(symbol) == index for index, symbol in enumerate(self.symbols))

    def check(self, token_id: Callable[[str], int | None], model: str, task: str) -> None:
        """One line naming the model, the task and the fix, where the model's tokenizer (`token_id`)
        does not use this vocabulary: the plan's check (the tokenizer's files, before any model
        loads) and the evaluator's (the loaded tokenizer) alike."""
        from path_eval.models.tokenizer import token_id_lookup
        from path_eval.models.zoo import zoo_models

        if self.used_by(token_id):
            return
        fitting = [f"zoo:{path.name}" for path in zoo_models()
                   if (lookup := token_id_lookup(path)) and self.used_by(lookup)]
        shown = " ".join(self.symbols) if len(self.symbols) <= 12 else \
            f"{' '.join(self.symbols[:4])} ... {self.symbols[-1]}"
        choices = f" ({', '.join(fitting)})" if fitting else ""
        raise PathEvalError(f"model {model} does not use the {self.task} vocabulary ({shown} as ids "
                            f"0-{len(self.symbols) - 1}), so it cannot run {self.task} task {task}: list {self.task} "
                            f"models under the task's models: (in a copy of the suite), or give --model only "
                            f"{self.task} models{choices}")

    def check_files(self, folder, model: str, task: str) -> None:
        """`check` from a checkpoint folder's tokenizer files, before any model loads (a tokenizer
        they cannot tell without torch is checked by the evaluator, once loaded)."""
        from path_eval.models.tokenizer import token_id_lookup

        token_id = token_id_lookup(folder)
        if token_id is not None:
            self.check(token_id, model, task)
