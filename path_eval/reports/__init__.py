"""Reports from result records and the suite a run stored: the run summary table (terminal.py), suite
and paper tables and comparisons (tables.py), per-position perplexity (extrapolation.py), the
regression check (check.py); stored.py finds a stored run's suite."""
from path_eval.reports.terminal import results_table

__all__ = ["results_table"]
