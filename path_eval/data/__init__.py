"""Evaluation data without a network at run time.

`eval.py download` (on a machine with internet) writes every dataset a suite needs as
    DATA_DIR/<org>/<name>/<config>/<split>.jsonl      (config `default` where there is none)
with the dataset's original fields; runs read only from such a folder. The lm-eval task
definitions and their Hugging Face ids stay the source of truth for what is needed.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

from path_eval.atomic_files import write_jsonl_atomic
from path_eval.errors import PathEvalError
from path_eval.locations import cache_dir


def default_data_dir() -> Path:
    return Path(os.environ.get("PATH_EVAL_DATA", cache_dir() / "data"))


@dataclass(frozen=True)
class DatasetSplit:
    """One split of one Hugging Face dataset (config None: the dataset has no configs)."""

    path: str
    config: str | None
    split: str

    def file(self, data_dir: Path) -> Path:
        return Path(data_dir) / self.path / (self.config or "default") / f"{self.split}.jsonl"

    def __str__(self) -> str:
        return f"{self.path}{'/' + self.config if self.config else ''} [{self.split}]"


def require(split: DatasetSplit, data_dir: Path, suite: str, download_options: str = "") -> Path:
    """The split's local file, or one error line naming the download that fetches it
    (`download_options`, e.g. a length outside the suite's own)."""
    file = split.file(data_dir)
    if not file.is_file():
        raise PathEvalError(f"missing data file {file} ({split}): run `python eval.py download --suite {suite} "
                            f"{download_options}--data-dir {data_dir}` on a machine with internet, or copy the file "
                            "there")
    check_jsonl(file, f"python eval.py download --suite {suite} {download_options}--data-dir {data_dir}")
    return file


_CHECKED_JSONL: set[tuple[str, int, int]] = set()


def check_jsonl(file: Path, fetch: str) -> None:
    """Every line of a JSONL data file parses, or one error line naming the file, the line and `fetch`
    (the command that writes it again). Each file is read once per (path, size, mtime)."""
    stat = file.stat()
    key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _CHECKED_JSONL:
        return
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError as err:
                raise PathEvalError(f"{file} line {number} is not JSON ({str(err).split(':')[0]}): run `{fetch}` "
                                    "again or fix that line") from None
    _CHECKED_JSONL.add(key)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(files: list[Path]) -> str:
    """One hash for the data a task read: sha256 over (file name, file sha256) pairs, sorted."""
    digest = hashlib.sha256()
    for file in sorted(files, key=str):
        digest.update(f"{Path(file).parent.parent.name}/{Path(file).parent.name}/{Path(file).name}:"
                      f"{file_sha256(file)}\n".encode())
    return digest.hexdigest()


# Hub datasets that only their loading script can read (`datasets` >= 4 runs no scripts): the rows come
# from the archive that script opens, as (file in the hub repository, member holding a config's rows).
HUB_ARCHIVES = {"THUDM/LongBench": ("data.zip", "data/{config}.jsonl")}


def archive_rows(split: DatasetSplit) -> list[dict]:
    """A config's rows out of the dataset's archive on the hub, as its loading script reads them."""
    import zipfile

    from huggingface_hub import hf_hub_download

    filename, member = HUB_ARCHIVES[split.path]
    archive = hf_hub_download(split.path, filename, repo_type="dataset")
    with zipfile.ZipFile(archive) as zipped, zipped.open(member.format(config=split.config)) as handle:
        return [json.loads(line) for line in io.TextIOWrapper(handle, encoding="utf-8") if line.strip()]


def download(splits: list[DatasetSplit], data_dir: Path) -> list[tuple[DatasetSplit, Path, int]]:
    """Fetch each split from the Hugging Face hub (the one step that uses the network)."""
    import logging

    import datasets

    # the hub logs each failed attempt; a failure is reported below in one line, a retry that works needs none
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    done = []
    for split in splits:
        try:
            rows = archive_rows(split) if split.path in HUB_ARCHIVES else \
                datasets.load_dataset(split.path, split.config, split=split.split)
        except (OSError, ValueError, datasets.exceptions.DatasetNotFoundError) as err:
            # huggingface_hub's and requests' errors are OSErrors; datasets raises ValueError on a bad config
            reason = str(err).strip().splitlines()[0][:160] if str(err).strip() else type(err).__name__
            raise PathEvalError(f"could not fetch {split} from the Hugging Face hub ({reason}): download needs the "
                                "internet; run it on a machine that has it and copy the data folder") from None
        target = split.file(data_dir)
        done.append((split, target, write_jsonl_atomic(iter(rows), target)))
    return done
