"""astral_dsl: a declarative digital-twin language for AI-training datacenters.

    >>> import astral_dsl
    >>> design = astral_dsl.load("examples/astral.astral")
    >>> design.valid, astral_dsl.summary(design)["gpus"]

The functions are those of astral_dsl/api.py (`load`, `loads`, `compile`, `compiles`, `check`,
`check_file`, `forecast`, `summary`, `Workspace`), imported on first use: `import astral_dsl`
alone (as `astral --help` does) imports nothing else."""
from __future__ import annotations

__version__ = "0.1.0"

_API = ("Checked", "Design", "Workspace", "check", "check_file", "compile", "compiles",
        "forecast", "front_end_errors", "load", "loads", "summary")


def __getattr__(name: str):
    if name in _API:
        from astral_dsl import api

        return getattr(api, name)
    raise AttributeError(f"module 'astral_dsl' has no attribute {name!r}")


__all__ = ["__version__", *_API]
