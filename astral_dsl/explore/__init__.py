"""Exploring the design space: sweeps over parameter grids (sweep.py), the parallelism search of
a job (search/) and the margins of every limit (margins/), run locally or on an existing Dask
cluster (engines.py). Workers get the design's source text and overrides (bundle.py)."""
