import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

if not torch.cuda.is_available():  # Triton kernels run interpreted on the CPU (read when they are decorated)
    os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("TRITON_INTERPRET") == "1":  # tf32 products as precise as on the GPU, no more
    from tests.tf32_emulation import install

    install()


import pytest  # noqa: E402  (after the environment defaults above)


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory):
    """The paper's Mistral v1 tokenizer (what a checkpoint without tokenizer files gets)."""
    from path_eval.models.tokenizer import load_tokenizer

    return load_tokenizer(tmp_path_factory.mktemp("no_tokenizer_files"))
