"""`eval.py download`'s one step that uses the network: each split fetched from the Hugging Face hub
into the offline layout (path_eval/data/layout.py)."""
from __future__ import annotations

import io
import json
from pathlib import Path

from path_eval.atomic_files import write_jsonl_atomic
from path_eval.data.layout import DatasetSplit
from path_eval.errors import PathEvalError


# Hub datasets that only their loading script can read (`datasets` >= 4 runs no scripts): the rows come
# from the archive that script opens, as (file in the hub repository, member holding a config's rows).
HUB_ARCHIVES = {"THUDM/LongBench": ("data.zip", "data/{config}.jsonl")}


# Hub datasets whose files only an account that accepted their terms may read, with the page to accept
# them on: refused, `download` says what the user needs (GPQA: its authors ask that it stay off the web).
GATED_DATASETS = {"Idavidrein/gpqa": "https://huggingface.co/datasets/Idavidrein/gpqa"}


def refusal(split: DatasetSplit, reason: str) -> str:
    """The one line a failed fetch of `split` prints: for a gated dataset what access it needs, else
    that download needs the internet."""
    if split.path in GATED_DATASETS:
        return (f"could not fetch {split} from the Hugging Face hub ({reason}): the dataset is gated: accept its "
                f"terms at {GATED_DATASETS[split.path]} with your hub account, then give download that account's "
                "token (HF_TOKEN=... or `hf auth login`) on a machine with internet")
    return (f"could not fetch {split} from the Hugging Face hub ({reason}): download needs the internet; run it on "
            "a machine that has it and copy the data folder")


def archive_rows(split: DatasetSplit) -> list[dict]:
    """A config's rows out of the dataset's archive on the hub, as its loading script reads them."""
    import zipfile

    from huggingface_hub import hf_hub_download

    filename, member = HUB_ARCHIVES[split.path]
    archive = hf_hub_download(split.path, filename, repo_type="dataset")
    with zipfile.ZipFile(archive) as zipped, zipped.open(member.format(config=split.config)) as handle:
        return [json.loads(line) for line in io.TextIOWrapper(handle, encoding="utf-8") if line.strip()]


def text_rows(rows):
    """The rows as JSON holds them: an image column (TheoremQA's `Picture`) becomes whether the row has
    an image, since the evaluations here show models text alone (and JSON cannot hold the picture)."""
    import datasets

    features = getattr(rows, "features", None) or {}
    images = [name for name, feature in features.items() if isinstance(feature, datasets.Image)]
    for name in images:
        rows = rows.cast_column(name, datasets.Image(decode=False))  # the bytes, not a decoded picture
    return ({**row, **{name: row[name] is not None for name in images}} for row in rows)


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
            raise PathEvalError(refusal(split, reason)) from None
        target = split.file(data_dir)
        done.append((split, target, write_jsonl_atomic(text_rows(rows), target)))
    return done
