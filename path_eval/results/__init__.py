"""Result records: one per (model, task, length, metric), with the provenance that makes them
comparable, validated by pydantic and written atomically."""
from path_eval.results.schema import Provenance, ResultRecord, RunResults
from path_eval.results.store import load_records, write_results

__all__ = ["Provenance", "ResultRecord", "RunResults", "load_records", "write_results"]
