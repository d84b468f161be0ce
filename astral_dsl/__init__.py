"""astral_dsl: a declarative digital-twin language for AI-training datacenters.

    >>> import astral_dsl
    >>> design = astral_dsl.load("examples/astral.astral")
    >>> design.valid, astral_dsl.summary(design)["gpus"]
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

__version__ = "0.1.0"


def load(path: str | Path, overrides: Optional[Mapping[str, str]] = None):
    """Compile a .astral file; returns a Design (check `.valid` and `.diagnostics`).

    `overrides` sets top-level parameters as `--set` does: {"hosts_per_rack": "8"}."""
    from astral_dsl.compiler import compile_file

    return compile_file(path, overrides)


def compile(path: str | Path, overrides: Optional[Mapping[str, str]] = None):
    """Compile a .astral file and return everything the compiler built: a Compilation with the
    `design`, the parsed `modules`, their `scopes` and the `instantiator`. `recompile(assignments,
    scenario)` evaluates the same parsed source again (sizing, what-if scenarios) and `under
    (scenario)` gives the design as compiled under one of its scenarios."""
    from astral_dsl.compiler import compile_path

    return compile_path(path, overrides)


def loads(text: str, name: str = "<string>", root: str | Path | None = None,
          overrides: Optional[Mapping[str, str]] = None):
    """Compile .astral source text; imports resolve against `root` (default: the current
    directory) and the stdlib."""
    from astral_dsl.compiler import compile_text

    return compile_text(text, name, root, overrides)


def summary(design) -> dict:
    """GPUs, hosts, racks, switches and IT power of a compiled design."""
    from astral_dsl.analyses.summary import summarize

    return summarize(design)


__all__ = ["__version__", "compile", "load", "loads", "summary"]
