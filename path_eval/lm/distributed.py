"""Data parallelism under `accelerate launch` (or torchrun) on one host: the model stays whole on
each process's device and the processes split the work themselves. lm-eval sees one process (it
builds every request on every process, pads nothing and merges nothing); the adapter hands each
process a share of every request list balanced by tokens and gathers the answers, so every process
ends a request call holding all of them in the order one process would."""
from __future__ import annotations

import heapq
import os
from typing import Callable, Sequence, TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")


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


def balanced_shares(costs: Sequence[int], processes: int) -> list[list[int]]:
    """The indices of `costs` for each process, each share in index order: the costliest item first
    to the least loaded process (ties to the lower index, then the lower rank), so the loads differ by
    at most the largest cost. A function of the costs alone: every process computes the same shares,
    and a resumed run with as many processes finds each request in its own resume cache again."""
    shares: list[list[int]] = [[] for _ in range(processes)]
    loads = [(0, rank) for rank in range(processes)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, rank = heapq.heappop(loads)
        shares[rank].append(index)
        heapq.heappush(loads, (load + costs[index], rank))
    return [sorted(share) for share in shares]


class DataParallel:
    """accelerate's process group: NCCL between GPUs, gloo between CPU processes."""

    def __init__(self, device: str):
        from accelerate import Accelerator

        self.accelerator = Accelerator(cpu=torch.device(device).type == "cpu")
        self.rank = self.accelerator.process_index
        self.world_size = self.accelerator.num_processes
        self.device = self.accelerator.device  # cuda:<local rank> on GPUs

    def model_device(self, device: str) -> str:
        """Where this process puts its model: its own GPU (`cuda:<local rank>`) for `cuda`."""
        return str(self.device) if torch.device(device).type == "cuda" else device

    def gather_object(self, obj):
        """Every process's `obj`, in rank order (on every process)."""
        from accelerate.utils import gather_object

        return gather_object([obj])

    def barrier(self) -> None:
        self.accelerator.wait_for_everyone()

    def map_strided(self, fn_many: Callable[[list[T]], list[R]], items: Sequence[T]) -> list[R]:
        """fn_many(items) on every process, each process computing every world_size-th item in one
        call (a cost that is then shared, such as tokenising long prompts in a batch)."""
        indices = range(self.rank, len(items), self.world_size)
        mine = dict(zip(indices, fn_many([items[i] for i in indices]), strict=True))
        return _in_order(self.gather_object(mine), len(items))

    def shared_answers(self, costs: Sequence[int], answer: Callable[[list[int]], list]) -> list:
        """The answers to every item on every process: each process answers its `balanced_shares`
        (`answer(indices)`: their answers in that order), then the answers are gathered."""
        mine = balanced_shares(costs, self.world_size)[self.rank]
        answers = answer(mine) if mine else []
        return _in_order(self.gather_object(dict(zip(mine, answers, strict=True))), len(costs))


def _in_order(parts: list[dict[int, R]], count: int) -> list[R]:
    merged: dict[int, R] = {}
    for part in parts:
        merged.update(part)
    return [merged[index] for index in range(count)]
