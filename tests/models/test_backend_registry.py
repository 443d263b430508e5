"""The attention registry names its built-in backends without importing them (so `--attention` is
checked before torch), and each name leads to the module that registers it under that name."""
import importlib
import subprocess
import sys

import pytest

from path_eval.errors import PathEvalError
from path_eval.models.attention import registry


@pytest.mark.parametrize("name", sorted(registry.BUILT_IN))
def test_each_built_in_name_is_registered_by_its_module(name):
    module = importlib.import_module(registry.BUILT_IN[name])
    assert registry.get_backend(name) is module.attend


def test_a_registered_backend_is_selectable_and_cannot_be_replaced():
    def attend(x, past, build_state):
        return x.q, None

    registry.register_backend("test-only", attend)
    try:
        assert registry.get_backend("test-only") is attend
        assert "test-only" in registry.backend_names()
        with pytest.raises(ValueError, match="already registered"):
            registry.register_backend("test-only", attend)
    finally:
        del registry.BACKENDS["test-only"]


def test_an_unknown_name_lists_every_selectable_one():
    with pytest.raises(PathEvalError, match="unknown attention backend 'flash': choose one of reference, torch, triton"):
        registry.check_backend_name("flash")


def test_names_are_checked_without_torch():
    code = ("import sys; from path_eval.models.attention import check_backend_name; check_backend_name('torch'); "
            "print('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
