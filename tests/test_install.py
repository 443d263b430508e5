"""The install path: triton, 286 MB that only a GPU runs, is no dependency of a CPU-only install but
comes with the `gpu` extra and with `test` (the kernel tests run under its CPU interpreter); a CPU
run works with triton absent."""
import os
import subprocess
import sys
import tomllib

from tests.helpers import ROOT

TRITON = "triton>=3.6; platform_system == 'Linux'"


def test_triton_comes_with_the_gpu_and_test_extras_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("triton")]
    assert TRITON in project["optional-dependencies"]["gpu"]
    assert TRITON in project["optional-dependencies"]["test"]  # .ci/run installs .[test]: the kernel tests


# triton absent as Python sees it (`import triton` fails, `find_spec("triton")` is None)
WITHOUT_TRITON = """
import sys
sys.modules["triton"] = None
import torch
from path_eval import load_model
from path_eval.models.zoo import zoo_models

model, tokenizer = load_model(zoo_models("path")[0], device="cpu")
ids = torch.tensor([tokenizer("a long context")["input_ids"]])
print(model.backend_name, tuple(model(ids).logits.shape))
"""


def test_a_cpu_run_needs_no_triton():
    out = subprocess.run([sys.executable, "-c", WITHOUT_TRITON], cwd=ROOT, capture_output=True, text=True,
                         env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    backend, shape = out.stdout.split(" ", 1)
    assert backend == "torch" and shape.startswith("(1, ")
