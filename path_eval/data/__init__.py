"""Evaluation data without a network at run time: the offline layout of a data dir (layout.py) and
`download`, which fills it from the Hugging Face hub (hub.py)."""
from path_eval.data.hub import download
from path_eval.data.layout import DatasetSplit, MissingDataFile, default_data_dir, file_sha256, fingerprint, require

__all__ = ["DatasetSplit", "MissingDataFile", "default_data_dir", "download", "file_sha256", "fingerprint", "require"]
