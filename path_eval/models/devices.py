"""A `--device` checked without torch: importing torch takes seconds (minutes on a loaded machine),
so a mistyped device, or a GPU asked of a machine that has none, is refused before it, as is an
attention backend that is not there or does not run on the device. Whether torch
can use the GPU that is there (its build, its driver, how many it sees) is checked once torch is
loaded (`path_eval.models.loading.check_device_and_backend`)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.models.attention.registry import check_backend_name

DEVICE = re.compile(r"(?P<kind>cpu|cuda)(?::(?P<index>\d+))?")

# The device files through which a Linux process reaches a GPU torch calls `cuda`: NVIDIA's driver,
# ROCm's (AMD), WSL2's. A machine with none of them has no such GPU, whatever torch was built for.
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def check_device_name(device: str) -> None:
    """`cpu`, `cuda` or `cuda:N`, and for `cuda` a machine with a GPU in it, or one error line."""
    match = DEVICE.fullmatch(str(device))
    if match is None:
        raise PathEvalError(f"unknown device {device!r}, or one not supported: give cpu, cuda or cuda:N")
    if match["kind"] == "cuda" and not has_gpu_device_files():
        raise PathEvalError(f"--device {device}: this machine has no CUDA GPU that torch can use: give --device cpu")


def check_device_and_backend_names(device: str, attention: str | None) -> None:
    """A device name this machine may have and an attention backend that runs there, or one error
    line: what can be told without torch."""
    check_device_name(device)
    check_backend_name(attention)
    if attention == "triton" and not str(device).startswith("cuda") and os.environ.get("TRITON_INTERPRET") != "1":
        raise PathEvalError("the triton attention backend runs on a CUDA GPU: give --device cuda, or --attention "
                            "torch on the CPU")


def has_gpu_device_files() -> bool:
    """Whether a GPU's device file is present; True where the platform has no such files to look at."""
    if not sys.platform.startswith("linux"):
        return True
    return any(Path(name).exists() for name in GPU_DEVICE_FILES)
