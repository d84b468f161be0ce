"""How an analysis reads a field's value and reports on it: `si`, a quantity's magnitude in SI
units, and `symbol_name`, a symbol's name, each None for any other value (an unknown, a missing
field); `error` and `warning`, the diagnostics it gives. Shared by the analyses (the feeders',
the cooling's, the network's, ...) and the pictures that read a field (outputs/render), which
kept private copies of each."""
from __future__ import annotations

from typing import Optional

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity


def si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def symbol_name(v) -> Optional[str]:
    return v.name if isinstance(v, Symbol) else None


def error(code, msg, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, msg, span, hint, notes=tuple(notes))


def warning(code, msg, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, msg, span, hint, notes=tuple(notes))
