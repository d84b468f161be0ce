"""Raising diagnostics from inside evaluation, and the marker for values already in error."""
from __future__ import annotations

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.model.values import POISON


def unknown_key(span: Span) -> str:
    return f"{span.file}:{span.start.line}:{span.start.column}"


class Poisoned(Exception):
    """An operand is POISON: abandon the expression without a new diagnostic."""


def fail(code: str, message: str, span: Span, hint: str | None = None):
    raise DiagnosticError(Diagnostic(code, Severity.ERROR, message, span, hint))


def check(value):
    if value is POISON:
        raise Poisoned()
    return value


