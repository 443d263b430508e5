"""A run's per-sample logs read back (OUT/samples/<model>/<name>.jsonl, one JSON line per sample, as
the evaluators write them through `path_eval.samples`): by rescore and by the reports' paired tests.
A committed compact copy of a run (training/study.py) holds them all in one archive beside its
records, OUT/samples.tar.xz, at the same paths, read the same way: its models share their
samples' inputs and targets, which one archive stores once."""
from __future__ import annotations

import functools
import json
import lzma
import tarfile
from pathlib import Path

from path_eval import run_folder
from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
from path_eval.plan import PlannedItem


def log_names(item: PlannedItem) -> list[str]:
    """The names of an item's logs, as its kind's row in path_eval/kinds/ names them: TASK@LENGTH
    for a corpus or flip-flop task; else one per lm-eval task (seed)."""
    return KINDS[item.kind].log_names(item)


def read_sample_log(run: Path, model: str, name: str) -> list[dict]:
    """The rows of log `name` of `model` in run folder `run`, or one error line. Lines end at "\\n" only:
    a sample's text may hold the characters `str.splitlines` also breaks at (U+2028, U+0085, ...), which
    JSON writes as they are."""
    written, file = run_folder.sample_log(run, model, name), sample_log_file(run, model, name)
    data = written.read_bytes() if written.is_file() else archived_log(Path(run), written)
    if data is None:
        raise PathEvalError(f"no per-sample log {file}: give the run folder with the samples/ folder the run wrote "
                            "beside its results.json")
    try:
        rows = [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()]
    except (ValueError, RecursionError) as err:  # not UTF-8 or JSON, or nested too deep
        raise PathEvalError(f"per-sample log {file} is not JSON lines ({str(err).split(':')[0]}): give the "
                            "samples/ folder the run wrote, or run it again") from None
    not_sample = next((row for row in rows if not isinstance(row, dict)), None)
    if not rows or not_sample is not None:
        problem = "holds no samples" if not rows else \
            f"holds a JSON {type(not_sample).__name__} where a sample (an object) belongs"
        raise PathEvalError(f"per-sample log {file} {problem}: give the samples/ folder the run wrote, or run it "
                            "again")
    return rows


ARCHIVE = "samples.tar.xz"  # a compact copy's logs, at their paths under the run folder


def sample_log_file(run: Path, model: str, name: str) -> Path:
    """The log as the run wrote it, else (where only the compact copy's archive holds it) its path
    inside the archive, OUT/samples.tar.xz/samples/<model>/<name>.jsonl, which messages name."""
    file = run_folder.sample_log(run, model, name)
    archive = Path(run) / ARCHIVE
    return archive / file.relative_to(run) if not file.is_file() and archive.is_file() else file


def archived_log(run: Path, written: Path) -> bytes | None:
    """The log the run wrote at `written`, from the run's archive; None where the archive (or the log
    in it) is missing."""
    archive = run / ARCHIVE
    if not archive.is_file():
        return None
    stat, name = archive.stat(), Path(written).relative_to(run).as_posix()
    try:
        return archived_logs(str(archive), stat.st_size, stat.st_mtime_ns).get(name)
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError) as err:  # not an xz tar archive
        raise PathEvalError(f"{run / ARCHIVE} is not a tar.xz archive of per-sample logs "
                            f"({str(err).split(':')[0]}): copy the run again with training/study.py") from None


@functools.lru_cache(maxsize=2)
def archived_logs(archive: str, size: int, mtime_ns: int) -> dict[str, bytes]:
    """Every log in the archive by its name, read once (a report reads hundreds of logs of one run);
    the size and modification time make a rewritten archive read afresh."""
    with tarfile.open(archive, "r:xz") as tar:
        return {entry.name: tar.extractfile(entry).read() for entry in tar if entry.isfile()}
