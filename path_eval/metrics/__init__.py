"""Metrics: per-sample scores of the original benchmarks (`retrieval.py`: RULER's and PhoneBook's;
`longbench.py`, `babilong.py`, `flipflop.py`), their aggregation (`aggregation.py`), and every
metric's entry in `registry.py`."""
