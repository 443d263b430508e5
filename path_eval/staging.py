"""Writing a file whole or not at all, for every stage that writes one."""
from __future__ import annotations

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
