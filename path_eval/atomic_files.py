"""Writing a file whole or not at all, for every stage that writes one. The ground floor of the
package (it imports nothing from it), so any stage can write files without importing a later one."""
from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged(target: Path, binary: bool = False):
    """A handle on a staging file that replaces `target` when the block ends, and is removed when it
    raises (a full disk, an interrupt), so `target` is never half-written. The staging name is this
    process's own: processes that write one file at once (data-parallel processes filling a fresh
    cache) would otherwise share one, and the later rename would find it gone."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{socket.gethostname()}-{os.getpid()}.{target.name}.partial")
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
