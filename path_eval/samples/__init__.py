"""The per-sample logs beside results.json (`logs.py`)."""
