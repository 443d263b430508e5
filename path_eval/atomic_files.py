"""Writing a file whole or not at all, for every stage that writes one. The ground floor of the
package (it imports only the ground floor's error), so any stage can write files without importing a
later one."""
from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.locations import cache_dir

STAGING_SUFFIX = ".partial"


def staging_prefix() -> str:
    """The start of this host's staging names: `.HOST-PID.NAME.partial`."""
    return f".{socket.gethostname()}-"


def refuse_link(path: Path) -> None:
    """A write never goes through a symbolic link: one planted in a run folder or a cache (a copied
    folder, a hostile one) would make it write wherever the link points."""
    if Path(path).is_symlink():
        raise PathEvalError(f"{path} is a symbolic link (to {os.readlink(path)}), and path-eval never writes "
                            "through one: remove the link (or give another folder)")


# What a path that is not a regular file is, in the refusal's words.
SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                 (stat.S_ISSOCK, "a socket"))


def refuse_special_file(path: Path) -> None:
    """A write replaces only a regular file: renamed over a FIFO, a device node or a socket, the staging
    file would take the place of something path-eval never wrote (as root, `/dev/null` itself)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there: making its folder says what is wrong
        return
    what = next((name for test, name in SPECIAL_FILES if test(mode)), None)
    if what is not None:
        raise PathEvalError(f"{path} is {what}, not a regular file, and path-eval replaces only regular files: "
                            "give the path of a new or a regular file")


def check_target(target: Path) -> None:
    """One line unless `target` is a path a write may replace: absent, or a regular file (not through a
    link). Commands that write a file the user names check it before their work, as `staged` does."""
    refuse_link(target)
    if Path(target).is_dir():  # else the rename fails naming the staging file, which the user never gave
        raise PathEvalError(f"{target} is a folder, where path-eval writes a file: give the path of a file")
    refuse_special_file(target)


@contextmanager
def staged(target: Path, binary: bool = False):
    """A handle on a staging file that replaces `target` when the block ends, and is removed when it
    raises (a full disk, an interrupt), so `target` is never half-written. The staging name is this
    process's own: processes that write one file at once (data-parallel processes filling a fresh
    cache) would otherwise share one, and the later rename would find it gone. A process killed
    mid-write leaves its staging file: `remove_stale_staging` clears those. `target` is a new path or
    a regular file: a link, a folder, a FIFO, a device or a socket there is refused, never replaced."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_target(target)
    staging = target.with_name(f"{staging_prefix()}{os.getpid()}.{target.name}{STAGING_SUFFIX}")
    try:
        with open(staging, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            yield handle
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def write_atomic(data: str | bytes, target: Path) -> None:
    """`target` holds `data` (text as UTF-8) whole or not at all."""
    with staged(target, binary=isinstance(data, bytes)) as handle:
        handle.write(data)


def write_json_atomic(data, target: Path) -> None:
    write_atomic(json.dumps(data, indent=1, ensure_ascii=False) + "\n", target)


def write_jsonl_atomic(rows, target: Path) -> int:
    """Write rows as JSON lines to `target` via a temporary file: never a half-written file."""
    count = 0
    with staged(target) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def write_npy_atomic(array, target: Path) -> None:
    """`target` holds the numpy `array` in .npy format whole or not at all."""
    import numpy as np

    with staged(target, binary=True) as handle:
        np.save(handle, array)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def left_by_dead_process(file: Path) -> bool:
    """A staging file of a process of this host that has ended (killed mid-write): another host's,
    or a live process's, may still be renamed into place."""
    name, prefix = Path(file).name, staging_prefix()
    if not (name.startswith(prefix) and name.endswith(STAGING_SUFFIX)):
        return False
    pid, _, rest = name[len(prefix):].partition(".")
    return pid.isdigit() and len(rest) > len(STAGING_SUFFIX) and not _process_alive(int(pid))


def remove_stale_staging(folder: Path) -> None:
    """Remove the staging files killed processes left anywhere under `folder` (links not followed)."""
    for root, _, files in os.walk(folder):
        for name in files:
            if left_by_dead_process(Path(root) / name):
                (Path(root) / name).unlink(missing_ok=True)


def links_under(folder: Path) -> list[Path]:
    """The symbolic links anywhere under `folder` (not followed; `folder` itself may be one)."""
    return sorted(Path(root) / name for root, dirs, files in os.walk(folder) for name in dirs + files
                  if (Path(root) / name).is_symlink())


def check_out_folder(out: Path) -> None:
    """A folder the run can write in (made if missing), or one error line before any model loads.
    Nothing inside it is a symbolic link (`--out` itself may be one): the run would write where the
    link points. The staging files of a killed run in it are removed."""
    if out.exists() and not out.is_dir():
        raise PathEvalError(f"--out {out} is a file: give a folder for the run (made if missing)")
    if out.is_symlink() and not out.exists():
        raise PathEvalError(f"--out {out} is a link to {os.readlink(out)}, which is not there: make that folder, "
                            "or give another --out")
    try:
        make_writable(out)
    except OSError as err:
        raise PathEvalError(f"--out {out} is not a folder the run can write in ({os_reason(err)}): "
                            "give a writable folder") from None
    for link in links_under(out)[:1]:
        refuse_link(link)
    remove_stale_staging(out)


def make_writable(folder: Path) -> None:
    """Make `folder` (and its parents) and a file in it; OSError where either cannot be."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder):
        pass


def os_reason(err: OSError) -> str:
    return os.strerror(err.errno) if err.errno else str(err)


def check_cache_folder() -> Path:
    """The cache folder (`path_eval.locations.cache_dir`), made if missing and writable, or one error
    line before any model loads; the staging files killed processes left in it (a frozen set, an
    index, a hash memo cut off mid-write) are removed, as a run folder's are."""
    cache = cache_dir()
    try:
        make_writable(cache)
    except OSError as err:
        raise PathEvalError(f"the cache folder {cache} is not a folder path-eval can write in ({os_reason(err)}): "
                            "give PATH_EVAL_CACHE a writable folder") from None
    remove_stale_staging(cache)
    return cache
