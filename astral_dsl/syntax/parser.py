"""Parse .astral text into the AST (Lark LALR, contextual lexer)."""
from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

import lark
from lark import Tree
from lark.exceptions import UnexpectedInput, VisitError

from astral_dsl import gcpause
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.syntax import ast, reduce, tables
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


_OPTIONS = dict(lexer="contextual", start=["start", "expr_only"], propagate_positions=True,
                maybe_placeholders=True)


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    """Lark's own road: a parse tree, then Builder (for the texts reduce.py leaves to it)."""
    # the tables come from the per-user cache (plain data, never a pickle): syntax/tables.py
    return tables.build("compiler", **_OPTIONS, tree_class=_Tree)


@lru_cache(maxsize=1)
def _concrete_parser() -> lark.Lark:
    """Every token, for the formatter, on Lark's own road (fmt/cst.py reads its tree)."""
    return tables.build("concrete", lexer="contextual", start=["start"],
                        propagate_positions=False, maybe_placeholders=False,
                        keep_all_tokens=True)


# Parsers whose callbacks build the AST as they reduce (reduce.py), each with its Builder: one
# parse at a time uses a pair, so threads (the language server's jobs) take a pair each.
_free: Dict[bool, List] = {False: [], True: []}
_free_lock = threading.Lock()
_UNAVAILABLE = object()


def _reduced(source: Source, start: str, concrete: bool):
    """The root Node of `source` built in the parser's reductions (reduce.py), or None when
    the text leaves that road (a diagnostic, deep nesting): the caller parses it on Lark's."""
    with _free_lock:
        pair = _free[concrete].pop() if _free[concrete] else None
    if pair is None:
        builder = Builder("")
        parser = reduce.install(tables.build("compiler", **_OPTIONS), builder, concrete,
                                MAX_NESTING)
        pair = (parser, builder) if parser is not None else _UNAVAILABLE
    if pair is _UNAVAILABLE:
        return None
    parser, builder = pair
    builder.f = source.name
    try:
        return parser.parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(syntax_diagnostic(source, exc)) from None
    except reduce.Fallback:
        return None
    finally:
        with _free_lock:
            _free[concrete].append(pair)


def parse(source: Source) -> ast.Module:
    """Parse a whole file. Raises DiagnosticError on a syntax error."""
    with gcpause.paused():             # a syntax tree is long-lived: none of it is garbage
        node = _reduced(source, "start", False)
        if node is not None:
            return node.value
        return _build(source.name, _run(source, "start"))


def parse_concrete(source: Source) -> Tuple[ast.Module, Tree]:
    """A whole file's AST and the tree of all its tokens that the formatter reads (the tree of
    Lark's `keep_all_tokens`), from one parse. Raises DiagnosticError on a syntax error."""
    with gcpause.paused():
        node = _reduced(source, "start", True)
        if node is not None:
            return node.value, node.concrete
        module = _build(source.name, _run(source, "start"))
        return module, _concrete_parser().parse(source.text)


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
    node = _reduced(source, "expr_only", False)
    if node is not None:
        return node.value
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
