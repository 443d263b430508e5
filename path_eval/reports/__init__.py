"""Reports from result records: for now the run summary table (rich, in the terminal)."""
from path_eval.reports.terminal import results_table

__all__ = ["results_table"]
