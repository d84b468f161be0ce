"""Parse .astral text into the AST (Lark LALR, contextual lexer)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Tuple

import lark
from lark.exceptions import UnexpectedInput, VisitError

from astral_dsl.diagnostics import Diagnostic, DiagnosticError
from astral_dsl.syntax import ast, tables
from astral_dsl.syntax.build import Builder
from astral_dsl.syntax.errors import syntax_diagnostic
from astral_dsl.syntax.source import Source

@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    # the tables come from the per-user cache (plain data, never a pickle): syntax/tables.py
    return tables.build("compiler", lexer="contextual", start=["start", "expr_only"],
                        propagate_positions=True, maybe_placeholders=True)


def parse(source: Source) -> ast.Module:
    """Parse a whole file. Raises DiagnosticError on a syntax error."""
    return _build(source.name, _run(source, "start"))


_TOP_LEVEL = re.compile(r"^(?:(?:import|param|let|check)\b|[A-Za-z_]\w*[ \t]+[A-Za-z_]\w*[ \t]*[({=])")
MAX_SYNTAX_ERRORS = 20


def parse_all(source: Source) -> Tuple[Optional[ast.Module], List[Diagnostic]]:
    """Parse a file and report every independent syntax error: after an error, parsing starts
    again at the next top-level statement (a line that starts at column 1 with a declaration,
    `import`, `param`, `let` or `check`); earlier lines are blanked so positions stay true."""
    try:
        return parse(source), []
    except DiagnosticError as exc:
        first = exc.diagnostic
    diagnostics = [first]
    lines = source.text.split("\n")
    last = _line_of(first)
    while len(diagnostics) < MAX_SYNTAX_ERRORS:
        restart = next((i for i in range(last, len(lines)) if _TOP_LEVEL.match(lines[i])), None)
        if restart is None:
            break
        rest = Source(source.name, "\n" * restart + "\n".join(lines[restart:]))
        try:
            parse(rest)
            break
        except DiagnosticError as again:
            line = _line_of(again.diagnostic)
            if line <= last:
                break
            diagnostics.append(again.diagnostic)
            last = line
    return None, diagnostics


def _line_of(d: Diagnostic) -> int:
    return d.span.start.line if d.span is not None else 1 << 30


def parse_expression(source: Source) -> ast.Expr:
    return _build(source.name, _run(source, "expr_only"))


def _build(name: str, tree):
    try:
        return Builder(name).transform(tree)
    except VisitError as exc:          # a diagnostic raised while building a node
        if isinstance(exc.orig_exc, DiagnosticError):
            raise exc.orig_exc from None
        raise


def _run(source: Source, start: str):
    try:
        return _parser().parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(syntax_diagnostic(source, exc)) from None
