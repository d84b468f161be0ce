"""Runs tables: published (or a team's own measured) training runs, forecast by Seer and scored
(docs/runs.md): `astral runs RUNS.csv` and `astral calibrate RUNS.csv`."""
