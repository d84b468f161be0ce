"""Exploring the design space: sweeps over parameter grids (sweep.py), the parallelism search of
a job (search.py) and the margins of every limit (margins.py), run locally or on an existing Dask
cluster (engines.py). Workers get the design's source text and overrides (bundle.py)."""
