"""Data parallelism under `accelerate launch` (or torchrun): lm-eval's evaluator hands each process
every world_size-th document and asks the model for these collectives to pad, gather and merge;
the model itself stays whole on each process's device."""
from __future__ import annotations

import os

import torch


def launched_processes() -> int:
    """How many processes the launcher started (1 when run plainly)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def finish_processes() -> None:
    """Wait for every process, then take the process group down. A process that exits with gloo's
    threads still up can abort ("terminate called without an active exception": one data-parallel
    CI test in about six runs, on the process that returns early while the first writes results)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


class DataParallel:
    """accelerate's process group: NCCL between GPUs, gloo between CPU processes."""

    def __init__(self, device: str):
        from accelerate import Accelerator

        self.accelerator = Accelerator(cpu=torch.device(device).type == "cpu")
        self.rank = self.accelerator.process_index
        self.world_size = self.accelerator.num_processes
        self.device = self.accelerator.device  # cuda:<local rank> on GPUs

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return self.accelerator.gather(tensor)

    def gather_object(self, obj):
        """Every process's `obj`, in rank order (on every process)."""
        from accelerate.utils import gather_object

        return gather_object([obj])

    def barrier(self) -> None:
        self.accelerator.wait_for_everyone()
