"""How an analysis reads a field's value and reports on it: `si`, a quantity's magnitude in SI
units, and `symbol_name`, a symbol's name, each None for any other value (an unknown, a missing
field); `error` and `warning`, the diagnostics it gives. Shared by the feeder analyses
(feeders.py, feeder_equipment.py, feeder_backing.py, feeder_voltage.py, conductors.py)."""
from __future__ import annotations

from typing import Optional

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity


def si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def symbol_name(v) -> Optional[str]:
    return v.name if isinstance(v, Symbol) else None


def error(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, msg, span, hint)


def warning(code, msg, span, hint=None) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, msg, span, hint)
