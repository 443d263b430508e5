"""Data-parallel coordination of a run (`accelerate launch` or torchrun, on one host), in one place:
the process group is made before any model loads; each process loads the model in a thread while it
freezes its share of the run's sample sets (`freeze_shares`); every process then answers its
token-balanced share of each request list and gets everyone's answers (`path_eval.lm.distributed`);
the first process alone writes plan, records, results and the phase times (OUT/timings.json); the
processes' counters are gathered for the provenance."""
from __future__ import annotations

import multiprocessing
import os
import time
from collections import defaultdict
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from path_eval import run_folder
from path_eval.cpu_threads import usable_cores
from path_eval.atomic_files import write_json_atomic
from path_eval.evaluators import FrozenSet
from path_eval.lm.distributed import DataParallel, balanced_shares, launched_processes
from path_eval.lm.distributed import finish_processes  # noqa: F401  (the run's last step)
from path_eval.tasks import frozen

PHASES = ("start", "tokenizer", "load", "samples", "load_wait", "requests", "records", "write")


def start(device: str) -> DataParallel | None:
    """The process group under a launcher (None when run plainly), made before any model loads so
    that the processes can share the sample generation while their models load."""
    return DataParallel(device) if launched_processes() > 1 else None


def model_device(parallel: DataParallel | None, device: str) -> str:
    return parallel.model_device(device) if parallel else device


# The name of the thread a model loads in: a command stopped by a signal exits without waiting for it.
LOADER_THREAD = "path-eval-load"


def load_in_background(path: Path, times: "PhaseTimes", device: str, **options) -> Future:
    """`load_network(path, device=device, **options)` in a thread (weights are read and copied with
    the GIL released, so the main thread freezes samples meanwhile); the future's result is the model,
    or the loading error. The caller loads the tokenizer (it needs it for the samples meanwhile)."""
    import torch

    from path_eval.models.loading import load_network

    def load():
        with times.phase("load"):
            if torch.device(device).type == "cuda" and torch.device(device).index is not None:
                torch.cuda.set_device(device)  # this thread's GPU is the process's: no context on another
            return load_network(path, device=device, **options)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=LOADER_THREAD)
    loading = pool.submit(load)
    pool.shutdown(wait=False)
    return loading


@contextmanager
def load_settled_on_error(loading: Future):
    """An error while the model loads (a bad sample, Ctrl-C during the samples) propagates only once
    the load has ended: transformers patches process-wide names for the duration of a load
    (`PreTrainedModel.tie_weights`, torch's default dtype), as does the harness's own loader (torch's
    init functions, `models.loading.uninitialised_modules`), and restores them at its end, so a load
    left running beside the caller's next `evaluate` restores them crosswise and leaves them patched
    (every later load in the process then lacks its tied `lm_head.weight`). The load's own result or
    error is dropped: the first error is the one reported. A stop of the whole process (the command
    line's SIGINT or SIGTERM, which exits: no later load can meet the patched names) does not wait,
    so a signal is honoured while a large checkpoint loads."""
    try:
        yield
    except (Exception, KeyboardInterrupt):
        wait([loading])
        raise


def freeze_shares(sets: list[FrozenSet], parallel: DataParallel | None) -> None:
    """Freeze (or find already frozen) every sample set, each process its share balanced by tokens;
    then every process waits for all, so the sets exist before anyone reads them (each read checks
    the set against its recorded hash)."""
    processes = parallel.world_size if parallel else 1
    shares = balanced_shares([s.tokens for s in sets], processes)
    freeze_on_cores([sets[index] for index in shares[parallel.rank if parallel else 0]],
                    cores=max(1, usable_cores() // processes))
    if parallel:
        parallel.barrier()


# Below this many tokens of samples, starting worker processes (each imports the task code) costs
# more than it saves; above it (long RULER and PhoneBook sets), generating takes minutes on one core.
POOL_MIN_TOKENS = 4_000_000


def pool_size(sets: list[FrozenSet], cores: int) -> int:
    """Worker processes to freeze `sets` in: one a set, leaving a core to this process; 0 (freeze them
    here) below two workers or below POOL_MIN_TOKENS."""
    workers = min(len(sets), cores - 1)
    return workers if workers >= 2 and sum(s.tokens for s in sets) >= POOL_MIN_TOKENS else 0


def freeze_on_cores(sets: list[FrozenSet], cores: int) -> None:
    """Freeze `sets` here, or, when those not frozen yet are large and this process has spare cores,
    in that many worker processes (spawned: the model loads in a thread meanwhile), costliest first. A set
    another process is making is passed over and waited for at the end, so processes of one study
    freezing the same sets split them rather than each trailing the first. Each set is generated
    from its own seed and written atomically, so where it is made changes no sample."""
    if pool_size(sets, cores):
        sets = [s for s in sets if not frozen.found_frozen(s.freeze)]  # frozen already: no worker for them
    workers = pool_size(sets, cores)
    if not workers:
        ordered = sets
        done = [frozen.freeze_unless_busy(s.freeze) for s in ordered]
    else:
        ordered = sorted(sets, key=lambda s: -s.tokens)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(frozen.freeze_unless_busy, [s.freeze for s in ordered]))
    for frozen_set, made in zip(ordered, done):
        if not made:
            frozen_set.freeze()  # waits for the process making it, then checks what it wrote


def writes_results(parallel: DataParallel | None) -> bool:
    """Whether this process writes the run's files: the first, or the only one."""
    return parallel is None or parallel.rank == 0


def gathered_counters(lm) -> list[dict]:
    """Every process's counters over every segment of the run, in rank order (a one-element list
    when run plainly)."""
    return lm.gather_object(lm.total_counters())


class PhaseTimes:
    """Wall seconds this process spent in each phase of the run, summed over its models: `start`
    (from the process's start to the run's: the interpreter, the command line, the imports of torch,
    transformers and lm-eval, the plan and its checks; Linux only; for a Python caller, its process's
    age), `tokenizer` (loading and hashing it), `load` (the model, in its thread), `samples` (freezing
    this process's share and waiting for the others'), `load_wait` (the load still running once the
    samples are frozen), `requests` (the evaluators, sample logs included), `records` (each model's
    records and lm-eval's layout of its results), `write` (the aggregates and results.json). A run's
    cost beyond its model calls is these less the model's own seconds (the provenance's tokens over
    tokens_per_second): `benchmarks.fixed_cost`. Each timed phase is also
    kept as a span of Unix times (`spans`), so that what a GPU did meanwhile can be matched to it
    (`benchmarks.suite_busy`)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.spans: list[tuple[str, float, float]] = []

    @contextmanager
    def phase(self, name: str):
        start, began = time.perf_counter(), time.time()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.spans.append((name, round(began, 3), round(time.time(), 3)))

    def started(self) -> None:
        """Count `start`: the seconds from this process's start to now (Linux's /proc; left at 0 elsewhere)."""
        try:
            stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
            uptime = float(Path("/proc/uptime").read_text().split()[0])
            self.seconds["start"] += max(uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK"), 0.0)
        except (OSError, ValueError, IndexError, AttributeError):
            pass

    def as_dict(self) -> dict[str, float]:
        return {name: round(self.seconds[name], 3) for name in PHASES}


def write_timings(times: PhaseTimes, parallel: DataParallel | None, out: Path, writes: bool) -> None:
    """OUT/timings.json: every process's phase times and spans, in rank order (before the group goes
    down)."""
    mine = (times.as_dict(), times.spans)
    gathered = parallel.gather_object(mine) if parallel else [mine]
    if writes:
        write_json_atomic({"processes": [phases for phases, _ in gathered],
                           "spans": [[list(span) for span in spans] for _, spans in gathered]},
                          run_folder.timings_file(out))
