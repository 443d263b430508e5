"""The one table of kinds, `KINDS` (name -> `Kind`), filled by `register`: the built-in kinds here,
from their modules in the order the runner runs them (records list their tasks in it), and any
other kind (a test's, a user's) by calling `register` with its row, nothing else."""
from __future__ import annotations

from path_eval.kinds import a5, code, corpus, flipflop, generated, lm_eval, mqrar, theoremqa
from path_eval.kinds.base import Kind

KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Adds a kind after the registered ones; a name or a suite key taken already is refused, since a
    task would then be read by two kinds' rules."""
    taken = next((k for k in KINDS.values() if kind.name == k.name or kind.key == k.key), None)
    if taken is not None:
        raise ValueError(f"kind {kind.name!r} (key {kind.key!r}) clashes with the registered kind {taken.name!r} "
                         f"(key {taken.key!r}): give it a name and key of its own")
    KINDS[kind.name] = kind
    return kind


def kind_of_key(key: str) -> Kind | None:
    """The kind a suite names by `key` (None: no kind's)."""
    return next((kind for kind in KINDS.values() if kind.key == key), None)


# The built-in kinds, in the order the runner runs them (a new built-in kind: its module, added here).
BUILT_IN = (lm_eval.KIND, generated.KIND, corpus.KIND, flipflop.KIND, a5.KIND, mqrar.KIND, code.KIND,
            theoremqa.KIND)
for _kind in BUILT_IN:
    register(_kind)
