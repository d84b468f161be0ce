"""One Diagnostic type for the CLI, JSON output and editors."""
from astral_dsl.diagnostics.diagnostic import (
    Diagnostic,
    DiagnosticError,
    Position,
    Related,
    Severity,
    Span,
    did_you_mean,
    excerpt,
    has_errors,
    moved_to,
    own_part,
    sort_diagnostics,
    span_at,
    with_related,
)
from astral_dsl.diagnostics.codes import CODES, describe
from astral_dsl.diagnostics.places import MAX_PLACES, gathered

__all__ = [
    "CODES",
    "Diagnostic",
    "DiagnosticError",
    "MAX_PLACES",
    "Position",
    "Related",
    "Severity",
    "Span",
    "describe",
    "did_you_mean",
    "excerpt",
    "gathered",
    "has_errors",
    "moved_to",
    "own_part",
    "sort_diagnostics",
    "span_at",
    "with_related",
]
