"""The transition-kernel ablation bench edits the committed prep.py: every edit must still find its
text there (once), and each variant must import as a module of its own with the edit applied."""
from pathlib import Path

import pytest

from path_eval.bench.transition_ablation import EDITS, variant_module


@pytest.mark.parametrize("name, old, new", [(n, o, w) for n, _, o, w in EDITS if o is not None], ids=lambda v: str(v)[:30])
def test_each_variant_is_prep_py_with_its_edit(name, old, new, tmp_path):
    from path_eval.kernels.path_attn import prep
    module = variant_module(name, old, new, tmp_path)
    source = Path(module.__file__).read_text()
    for o, n in zip(*((old, new) if isinstance(old, tuple) else ((old,), (new,)))):
        assert o not in source and n in source
    assert source != Path(prep.__file__).read_text()
    assert callable(module.chunk_transitions)


def test_an_edit_whose_text_is_gone_stops_the_bench(tmp_path):
    with pytest.raises(SystemExit, match="no longer in prep.py"):
        variant_module("gone", "text that prep.py does not hold\n", "", tmp_path)
