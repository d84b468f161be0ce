"""The job checks' diagnostics: an error or a warning with its span, hint and notes (validate.py
and its checks, validate_*.py)."""
from __future__ import annotations

from astral_dsl.diagnostics import Diagnostic, Severity


def err(code, message, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint, notes=tuple(notes))


def warn(code, message, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, span, hint, notes=tuple(notes))
