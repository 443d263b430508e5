import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The tests' models and kernel shapes are tiny: one thread per process (this one and the CLI runs it
# starts) is faster than two on a 2-core machine (the processes would contend for the cores), and the
# golden records compare equal to the last bit either way. MKL's pool is sized apart from OpenMP's;
# torch's inter-op pool is sized by the core count unless set before its first use.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", os.environ["OMP_NUM_THREADS"])
# Importing nltk (the BABILong tests do) sets PYTHONSAFEPATH=1 for every later child process unless
# it is already set; an empty value keeps the default, the working folder on a child's import path,
# so the tests' `python -m tests...` and `python -m benchmarks...` children import as they should.
os.environ.setdefault("PYTHONSAFEPATH", "")

import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
torch.set_num_interop_threads(int(os.environ["OMP_NUM_THREADS"]))

if not torch.cuda.is_available():  # Triton kernels run interpreted on the CPU (read when they are decorated)
    os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("TRITON_INTERPRET") == "1":  # tf32 products as precise as on the GPU, no more; builtins listed once
    from tests import tf32_emulation, triton_interpreter

    tf32_emulation.install()
    triton_interpreter.install()


import pytest  # noqa: E402  (after the environment defaults above)

from tests.shared_data import SHARED_DATA  # noqa: E402

NO_SHARED_DATA = f"needs ../shared/data (not found at {SHARED_DATA}; set PATH_EVAL_SHARED_DATA)"


@pytest.fixture(autouse=True)
def each_test_encodes_afresh():
    """The process-wide store of encodings (`path_eval.lm.encodings`) emptied after each test: a test
    counting tokenizer calls must not find the texts an earlier test of its worker encoded."""
    yield
    import sys

    module = sys.modules.get("path_eval.lm.encodings")  # a test that never imported it left nothing
    if module is not None:
        module.ENCODING_STORE.clear()


def pytest_collection_modifyitems(config, items):
    """Tests marked `shared_data` (row counts, hashes, numbers of the full sets) skip without the data."""
    if SHARED_DATA.is_dir():
        return
    for item in items:
        if item.get_closest_marker("shared_data"):
            item.add_marker(pytest.mark.skip(reason=NO_SHARED_DATA))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left_out = [r for r in terminalreporter.stats.get("skipped", [])
                if isinstance(r.longrepr, tuple) and r.longrepr[2].endswith(NO_SHARED_DATA)]
    if left_out:
        terminalreporter.write_line(f"left out {len(left_out)} tests that need ../shared/data (not beside this "
                                    f"checkout: {SHARED_DATA}; set PATH_EVAL_SHARED_DATA to run them)")


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    """The paper's Mistral v1 tokenizer (what a checkpoint without tokenizer files gets)."""
    from path_eval.models.tokenizer import load_tokenizer

    return load_tokenizer(tmp_path_factory.mktemp("no_tokenizer_files"))
