"""The `allow` statements of a design's own modules (model/allows.py says what they accept):
collected from the syntax trees, statements only, and checked: the code must be a warning's
(errors are never accepted) and the reason must be said (E220)."""
from __future__ import annotations

from typing import Iterable, List, Optional

from astral_dsl.diagnostics import Diagnostic, Severity, Span, did_you_mean
from astral_dsl.diagnostics.codes import CODES
from astral_dsl.model.allows import Allow
from astral_dsl.syntax import ast

WARNINGS = sorted(c for c in CODES if c.startswith("W"))
# W220 says an `allow` is stale: accepting it would hide the very thing to clean up
NEVER = ("W220",)


def collect(modules: Iterable, entry_key: str, diagnostics: List[Diagnostic]) -> tuple:
    """The allows of every module of the project (not the stdlib's), in source order; E220 for
    each that cannot accept anything."""
    modules = list(modules)
    stdlib = tuple(sorted(m.source.name for m in modules if m.is_stdlib and m.source is not None))
    out: List[Allow] = []
    for m in modules:
        if m.is_stdlib or m.tree is None:
            continue
        files = (m.tree.file,) + (("",) + stdlib if m.key == entry_key else ())
        for stmt, covers, scope, scenario in _statements(m.tree.items, None, "file", None):
            allow = _allow(stmt, diagnostics, covers, scope, files if scope == "file" else (),
                           scenario)
            if allow is not None:
                out.append(allow)
    return tuple(out)


def _statements(items, covers: Optional[Span], scope: str, scenario: Optional[str]):
    """(allow, the span it covers, its scope, the scenario it is in) for every `allow` below
    `items`, through declarations, value bodies and record blocks."""
    for item in items:
        if isinstance(item, ast.Allow):
            yield item, covers, scope, scenario
        elif isinstance(item, ast.Decl) and item.body:
            inner = "template" if scope == "file" else "instance"
            named = item.name.name if item.kind.name == "scenario" and scope == "file" \
                else scenario
            yield from _statements(item.body, item.span, inner, named)
        elif isinstance(item, ast.Field) and item.body:
            yield from _statements(item.body, item.span, "instance", scenario)
        elif isinstance(item, ast.Record):
            yield from _statements(item.body, covers, scope, scenario)


def _allow(stmt: ast.Allow, diagnostics: List[Diagnostic], covers, scope, files,
           scenario) -> Optional[Allow]:
    code = stmt.code.name
    if code in CODES and code.startswith("E"):
        diagnostics.append(Diagnostic(
            "E220", Severity.ERROR, f"`allow {code}`: {code} is an error, and errors cannot be "
                                    "accepted", stmt.code.span,
            "fix what it reports; only warnings (W...) may be accepted"))
        return None
    if code not in CODES or code in NEVER:
        why = "says an `allow` accepts nothing: remove that `allow` instead" \
            if code in NEVER else "is not a warning code"
        diagnostics.append(Diagnostic(
            "E220", Severity.ERROR, f"`allow {code}`: `{code}` {why}", stmt.code.span,
            did_you_mean(code, WARNINGS) or "the codes are listed in docs/diagnostics.md"))
        return None
    if stmt.reason is None or not stmt.reason.value.strip():
        diagnostics.append(Diagnostic(
            "E220", Severity.ERROR, f"`allow {code}` says no reason", stmt.span,
            f"say why the warning stands, e.g. `allow {code} \"data sheet expected by June\"`"))
        return None
    return Allow(code, stmt.reason.value, stmt.span, scope, covers, files, scenario)
