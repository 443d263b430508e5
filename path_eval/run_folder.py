"""The run folder's layout, in one place: every path a run (or `rescore`) writes in it, the default
folder's name, the per-sample logs' file names, which of a folder's entries a run can have made, and
the lock that keeps a second process out of a folder in use. Every stage asks this module for its
paths; `tests/test_architecture.py` counts run-folder path expressions anywhere else.

    OUT/plan.json, suite.json           the plan and the suite it resolved (before any model loads)
    OUT/run.lock                        held (flock) by the one process writing the folder, removed as
                                        it lets go (a killed one leaves it, unheld)
    OUT/resume/<model>-<key>_rank<N>.db the resume cache of each model and process
    OUT/samples/<model>/<log>.jsonl     the per-sample logs (<log>/block-NNNNN.npy: corpus blocks)
    OUT/curves/<model>/<log>.npy        per-position mean NLL of a corpus task at a length
    OUT/lm_eval/<model>/                lm-eval's own layout
    OUT/results.json, timings.json      the records and each process's phase times
    OUT/perplexity_by_position.*        the per-position report of corpus tasks
    OUT/rescored-<rule>/                `rescore`'s default output
    OUT/wandb/                          W&B's offline run (`--wandb-args`)

It sits beside `samples` (whose `slug` names a model's folders), below every stage that reads or
writes a run, and reads nothing of theirs: the stages that know a plan compare it themselves
(`path_eval.plan.stored`)."""
from __future__ import annotations

import errno
import fcntl
import os
import re
from contextlib import contextmanager
from pathlib import Path

from path_eval.atomic_files import STAGING_SUFFIX, refuse_link
from path_eval.errors import PathEvalError
from path_eval.samples.logs import slug

DEFAULT_ROOT = Path("runs")  # runs/SUITE-KEY when --out is not given
DEMO_FOLDER = DEFAULT_ROOT / "demo"  # `eval.py demo`'s

PLAN, SUITE, RESULTS, TIMINGS, LOCK = "plan.json", "suite.json", "results.json", "timings.json", "run.lock"
RESULTS_ARCHIVE = RESULTS + ".xz"  # a compact copy's records (training/study.py), read as results.json is
SAMPLES, CURVES, RESUME, LM_EVAL, WANDB = "samples", "curves", "resume", "lm_eval", "wandb"
BY_POSITION = "perplexity_by_position"
BY_POSITION_FORMATS = ("csv", "md", "png")
RESCORED_PREFIX = "rescored-"
LOG_SUFFIX = ".jsonl"

# What a run (or `rescore`) ever makes at the top of a run folder; anything else is someone else's.
RUN_ENTRIES = frozenset({PLAN, SUITE, RESULTS, TIMINGS, LOCK, SAMPLES, CURVES, RESUME, LM_EVAL, WANDB,
                         *(f"{BY_POSITION}.{ext}" for ext in BY_POSITION_FORMATS)})


def default_folder(name: str, key: str) -> Path:
    """runs/NAME-KEY: the folder of a run given no --out."""
    return DEFAULT_ROOT / f"{slug(name)}-{key}"


def plan_file(run: Path) -> Path:
    return Path(run) / PLAN


def suite_file(run: Path) -> Path:
    return Path(run) / SUITE


def results_file(run: Path) -> Path:
    return Path(run) / RESULTS


def results_of(path: Path) -> Path:
    """The records a reader is given: a run folder's results.json (a compact copy's results.json.xz
    where the folder holds that alone), or a results file given on its own."""
    path = Path(path)
    if not path.is_dir():
        return path
    plain, archived = results_file(path), path / RESULTS_ARCHIVE
    return archived if archived.is_file() and not plain.exists() else plain


def folder_of(results: Path) -> Path:
    """The run folder of a run folder or of a results file."""
    results = Path(results)
    return results if results.is_dir() else results.parent


def timings_file(run: Path) -> Path:
    return Path(run) / TIMINGS


def lock_file(run: Path) -> Path:
    return Path(run) / LOCK


def resume_folder(run: Path) -> Path:
    return Path(run) / RESUME


def resume_cache_file(run: Path, model: str, key: str, rank: int) -> Path:
    return resume_folder(run) / f"{slug(model)}-{key}_rank{rank}.db"


def samples_root(run: Path) -> Path:
    return Path(run) / SAMPLES


def samples_folder(run: Path, model: str) -> Path:
    """OUT/samples/<model>: the per-sample logs of one model."""
    return samples_root(run) / slug(model)


def log_file(samples: Path, name: str) -> Path:
    """The per-sample log `name` (a kind's log name, `path_eval.kinds`) in a model's samples folder."""
    return Path(samples) / f"{name}{LOG_SUFFIX}"


def sample_log(run: Path, model: str, name: str) -> Path:
    return log_file(samples_folder(run, model), name)


def block_folder(samples: Path, name: str) -> Path:
    """The per-block NLL arrays of corpus log `name` (`block-NNNNN.npy`), kept for a resumed run."""
    return Path(samples) / name


def block_file(blocks: Path, index: int) -> Path:
    return Path(blocks) / f"block-{index:05d}.npy"


def saved_blocks(run: Path, model: str | None = None) -> list[Path]:
    """Every corpus block a run folder keeps (of any log; of `model`, else of any model)."""
    if model is None:
        return list(samples_root(run).glob("*/*/block-*.npy"))
    return list(samples_folder(run, model).glob("*/block-*.npy"))


def curve_file(run: Path, model: str, name: str) -> Path:
    return Path(run) / CURVES / slug(model) / f"{name}.npy"


def lm_eval_folder(run: Path) -> Path:
    """OUT/lm_eval: lm-eval's own layout (one folder per model, `path_eval.results.lm_eval_layout`)."""
    return Path(run) / LM_EVAL


def by_position_file(folder: Path, fmt: str) -> Path:
    return Path(folder) / f"{BY_POSITION}.{fmt}"


def rescored_folder(run: Path, rule: str | None) -> Path:
    """`rescore`'s default output: RUN/rescored-RULE (RULE `suite` for the suite's own rule)."""
    return Path(run) / slug(f"{RESCORED_PREFIX}{rule or 'suite'}")


def read_stored(model, file: Path, what: str, fix: str = ""):
    """The pydantic `model` stored as JSON in `file` (a run's plan.json or suite.json), or one line
    naming the first problem."""
    from pydantic import ValidationError  # not at import: the command line's parser reads this module

    try:
        return model.model_validate_json(file.read_bytes())
    except ValidationError as err:
        first = err.errors()[0]
        raise PathEvalError(f"{file} is not a path-eval {what}: {'.'.join(map(str, first['loc']))}: "
                            f"{first['msg']}{fix}") from None


def foreign_entries(folder: Path) -> list[str]:
    """The names at the top of `folder` that no run makes (a user's own files, another tool's), in
    order; staging files of a killed run and `rescore`'s folders are a run's."""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):  # made by the run; a file is refused as --out elsewhere
        return []
    return [name for name in names if name not in RUN_ENTRIES and not name.endswith(STAGING_SUFFIX)
            and not (name.startswith(RESCORED_PREFIX) and (Path(folder) / name).is_dir())]


def refuse_foreign(folder: Path, option: str = "--out") -> None:
    """One line where `folder` holds anything a run did not make: the run would write its files among
    them (and replace a results.json of another tool's)."""
    foreign = foreign_entries(folder)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise PathEvalError(f"{option} {folder} holds files that are not a path-eval run's ({shown}): give a new "
                            f"{option}, or remove them")


def writing_process() -> bool:
    """Whether this process writes the run folder: a plain run's one process, or the first of a
    launch (the launchers' RANK), known before any model or process group exists."""
    return int(os.environ.get("RANK", "0")) == 0


# The folders this process holds, with the open lock file of each: the kernel drops a lock when its
# process ends, however it ends, so a killed run never leaves a folder locked.
_held: dict[Path, int] = {}


@contextmanager
def locked(folder: Path, option: str = "--out"):
    """Hold `folder` for this process while the block runs (an exclusive `flock` on OUT/run.lock), or
    one line if another process holds it. Taken again by the process that holds it, it is held once.
    The other processes of a launch write nothing there and take nothing."""
    folder = Path(folder)
    key = folder.resolve()
    if key in _held or not writing_process():
        yield
        return
    lock = lock_file(folder)
    handle = _lock(lock, folder, option)
    try:
        os.ftruncate(handle, 0)
        os.write(handle, f"{os.getpid()}\n".encode())
    except OSError:
        pass  # the pid is a courtesy for the refusal line; the lock is what counts
    _held[key] = handle
    try:
        yield
    finally:
        del _held[key]
        if _is_file_of(handle, lock):  # removed while still held: no process can hold it meanwhile
            lock.unlink(missing_ok=True)
        os.close(handle)


def _lock(lock: Path, folder: Path, option: str) -> int:
    """An open handle on `lock`, exclusively locked, or one line naming the process holding it. A
    holder removes the file as it lets go, so a lock taken on a file just removed is taken again on
    the file now there."""
    while True:
        refuse_link(lock)
        try:
            handle = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise PathEvalError(f"{option} {folder}: cannot open its lock file {lock} "
                                f"({os.strerror(err.errno) if err.errno else err}): give a writable folder") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(handle)
            if err.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            raise PathEvalError(f"{option} {folder} is in use by another path-eval process{_lock_holder(lock)}: "
                                f"wait for it to finish, or give another {option}") from None
        if _is_file_of(handle, lock):
            return handle
        os.close(handle)


def _is_file_of(handle: int, path: Path) -> bool:
    """Whether the open `handle` is the file at `path` now (not one removed or replaced since)."""
    try:
        now, held = os.stat(path, follow_symlinks=False), os.fstat(handle)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _lock_holder(lock: Path) -> str:
    try:
        pid = lock.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {pid})" if re.fullmatch(r"\d{1,10}", pid) else ""


def check_still_there(folder: Path) -> None:
    """One line where the run folder `folder` was removed (or replaced) during the run: the lock file
    this process holds is no longer the folder's (a folder it does not hold: the folder is gone).
    Writes would make the folder anew and leave records without their plan and logs."""
    folder = Path(folder)
    handle = _held.get(folder.resolve())
    gone = not folder.is_dir() if handle is None else not _is_file_of(handle, lock_file(folder))
    if gone:
        raise PathEvalError(f"the run folder {folder} was removed or replaced during the run, and what it had "
                            "finished with it: start the run again (the same --out makes the folder anew)")
