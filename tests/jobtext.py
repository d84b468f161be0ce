"""A job's source text for the tests that add one to a fixture design (one shape, written
once): `job(name, model, gpus, parallel, batch)` with the `parallel` and `batch` records'
fields as written between their braces."""
from __future__ import annotations


def job(name: str, model: str, gpus: int, parallel: str, batch: str,
        placement: str = "Lab") -> str:
    return (f"\njob {name} {{\n  model = {model}\n  placement = {placement}\n  gpus = {gpus}\n"
            f"  parallel {{ {parallel} }}\n  batch {{ {batch} }}\n}}\n")
