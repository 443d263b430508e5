"""Reports from result records and the suite a run stored: suite and paper tables and comparisons
(tables.py: the one table builder `run`, `rescore` and `report` print; layout.py: the layout they
share), per-position perplexity (extrapolation.py), the regression check (check.py); stored.py finds
a stored run's suite."""
