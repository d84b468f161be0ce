"""astral_dsl: a declarative digital-twin language for AI-training datacenters.

    >>> import astral_dsl
    >>> design = astral_dsl.load("examples/astral.astral")
    >>> design.valid, astral_dsl.summary(design)["gpus"]
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

__version__ = "0.1.0"


def load(path: str | Path, overrides: Optional[Mapping[str, object]] = None):
    """Compile a .astral file; returns a Design (check `.valid` and `.diagnostics`).

    `overrides` sets top-level parameters as `--set` does: {"hosts_per_rack": "8"}; a value may
    also be a number (which, like a bare number on the command line, takes the unit of the
    parameter's default), a bool or a Quantity. Anything else is reported as E310. A path that
    is not a str or path, or overrides that are not a mapping, raise TypeError."""
    from astral_dsl.compiler import compile_file

    return compile_file(path, overrides)


def compile(path: str | Path, overrides: Optional[Mapping[str, str]] = None):
    """Compile a .astral file and return everything the compiler built: a Compilation with the
    `design`, the parsed `modules`, their `scopes` and the `instantiator`. `recompile(assignments,
    scenario)` evaluates the same parsed source again (sizing, what-if scenarios) and `under
    (scenario)` gives the design as compiled under one of its scenarios."""
    from astral_dsl.compiler import compile_path

    return compile_path(path, overrides)


def loads(text: str | bytes, name: str = "<string>", root: str | Path | None = None,
          overrides: Optional[Mapping[str, object]] = None):
    """Compile .astral source text (a str, or bytes as a file holds them); imports resolve
    against `root` (default: the current directory) and the stdlib. Text that is not Unicode
    (a lone surrogate, invalid UTF-8 bytes) is reported as E101. Text that is neither str nor
    bytes (None, a number) and overrides that are not a mapping raise TypeError."""
    from astral_dsl.compiler import compile_text

    return compile_text(text, name, root, overrides)


def summary(design) -> dict:
    """GPUs, hosts, racks, switches and IT power of a compiled design."""
    from astral_dsl.analyses.summary import summarize

    return summarize(design)


__all__ = ["__version__", "compile", "load", "loads", "summary"]
