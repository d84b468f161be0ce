"""Parse .astral text into the AST (Lark LALR, contextual lexer)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Tuple

import lark
from lark import Tree
from lark.exceptions import UnexpectedInput, VisitError

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.syntax import ast, tables
from astral_dsl.syntax.build import Builder
from astral_dsl.syntax.errors import syntax_diagnostic
from astral_dsl.syntax.source import Source

class _Meta:
    """Lark's positions of a node, in slots (Lark's own Meta keeps its thirteen attributes in a
    dict: about 400 bytes a node, most of a parse tree's memory)."""
    __slots__ = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
                 "container_line", "container_column", "container_start_pos",
                 "container_end_line", "container_end_column", "container_end_pos")

    def __init__(self):
        self.empty = True


class _Tree(Tree):
    @property
    def meta(self):
        if self._meta is None:
            self._meta = _Meta()
        return self._meta


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    # the tables come from the per-user cache (plain data, never a pickle): syntax/tables.py
    return tables.build("compiler", lexer="contextual", start=["start", "expr_only"],
                        propagate_positions=True, maybe_placeholders=True, tree_class=_Tree)


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


# How deep the syntax tree of a file may nest (expressions, brackets and bodies alike: a call
# is two levels, an operator, a bracket or a body one). Every later pass (the evaluator, the
# formatter, the language server) walks the tree recursively and needs about three Python frames
# a level, within the interpreter's limit of 1,000: 200 levels leave room for the callers.
MAX_NESTING = 200


def _build(name: str, tree):
    """The AST of a Lark tree, built one top-level item at a time: the item's Lark subtree is
    dropped once it is built, so a file's parse tree and its AST are not held at once."""
    builder = Builder(name)
    try:
        if tree.data != "start":
            _bound_nesting(name, tree)
            return builder.transform(tree)
        items = tree.children
        for i, item in enumerate(items):
            if isinstance(item, Tree):
                _bound_nesting(name, item)
                items[i] = builder.transform(item)
        return builder.transform(tree)
    except VisitError as exc:          # a diagnostic raised while building a node
        if isinstance(exc.orig_exc, DiagnosticError):
            raise exc.orig_exc from None
        raise


def _bound_nesting(name: str, tree) -> None:
    """E402 at the first node nested deeper than MAX_NESTING (an iterative walk: no recursion
    however deep the tree)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            span = Span.at(name, meta.line, meta.column, meta.end_line, meta.end_column) \
                if not meta.empty else Span.at(name, 1, 1)
            raise DiagnosticError(Diagnostic(
                "E402", Severity.ERROR,
                f"expressions nest more than {MAX_NESTING} levels deep here",
                span, "split the expression with `let` names"))
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth + 1))


def _run(source: Source, start: str):
    try:
        return _parser().parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(syntax_diagnostic(source, exc)) from None
