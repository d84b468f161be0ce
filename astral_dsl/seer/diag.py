"""The job checks' diagnostics: an error or a warning with its span, hint and notes (validate.py
and its checks, validate_*.py)."""
from __future__ import annotations

from astral_dsl.diagnostics import Diagnostic, Severity


def choices(n: int, keep, field: str) -> str:
    """`field = a, b or c`: the first few divisors of `n` that `keep` keeps (1 when it keeps
    none), for a hint."""
    found = [d for d in range(1, n + 1) if not n % d and keep(d)][:8] or [1]
    return f"{field} = " + (", ".join(map(str, found[:-1])) + " or " if len(found) > 1 else "") \
        + str(found[-1])


def err(code, message, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint, notes=tuple(notes))


def warn(code, message, span, hint=None, notes=()) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, span, hint, notes=tuple(notes))
