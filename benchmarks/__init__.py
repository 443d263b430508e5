"""Scripts for a GPU host, run from a checkout (`python -m benchmarks.NAME`), never shipped:
cross-checks against fla and performance measurements. Each prints a short table and writes JSON
records (committed under results/); none runs in CI. Beside each script, the `render_*` function
that turns its JSON into the tables of docs/benchmarks.md (`python -m benchmarks.docs`)."""
