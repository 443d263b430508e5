"""Scripts for a GPU host: cross-checks against fla and performance measurements.
Each prints a short table and writes JSON records; none runs in CI."""
