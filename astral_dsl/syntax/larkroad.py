"""Lark's parsers of the grammar and the two roads from text to AST (parser.py chooses):

- the fast road: a parser whose callbacks build the AST as it reduces (reduce.py), one per
  parse at a time (a pool: the language server's jobs are threads);
- Lark's own road: a parse tree with positions (`propagate_positions`), the bound on nesting,
  then Builder; the reference for every text the fast road leaves to it.

Only a text that is parsed imports this module and Lark: a design whose syntax trees all come
from the per-user cache (astcache.py) needs neither."""
from __future__ import annotations

import threading
from functools import lru_cache
from typing import Dict, List

import lark
from lark import Tree
from lark.exceptions import UnexpectedInput, VisitError

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.syntax import drive, reduce, tables
from astral_dsl.syntax.build import Builder
from astral_dsl.syntax.errors import syntax_diagnostic
from astral_dsl.syntax.parser import MAX_NESTING
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


OPTIONS = dict(lexer="contextual", start=["start", "expr_only"], propagate_positions=True,
                maybe_placeholders=True)


@lru_cache(maxsize=1)
def lark_parser() -> lark.Lark:
    """Lark's own road: a parse tree, then Builder (for the texts reduce.py leaves to it)."""
    # the tables come from the per-user cache (plain data, never a pickle): syntax/tables.py
    return tables.build("compiler", **OPTIONS, tree_class=_Tree)


@lru_cache(maxsize=1)
def concrete_parser() -> lark.Lark:
    """Every token, for the formatter, on Lark's own road (fmt/cst.py reads its tree)."""
    return tables.build("concrete", lexer="contextual", start=["start"],
                        propagate_positions=False, maybe_placeholders=False,
                        keep_all_tokens=True)


# Parsers whose callbacks build the AST as they reduce (reduce.py), each with its Builder: one
# parse at a time uses a pair, so threads (the language server's jobs) take a pair each.
_free: Dict[bool, List] = {False: [], True: []}
_free_lock = threading.Lock()
_UNAVAILABLE = object()


def reduced(source: Source, start: str, concrete: bool):
    """The root Node of `source` built in the parser's reductions (reduce.py), or None when
    the text leaves that road (a diagnostic, deep nesting): the caller parses it on Lark's."""
    with _free_lock:
        pair = _free[concrete].pop() if _free[concrete] else None
    if pair is None:
        builder = Builder("")
        parser = reduce.install(tables.build("compiler", **OPTIONS), builder, concrete,
                                MAX_NESTING)
        pair = (parser, builder, drive.driver(parser)) if parser is not None else _UNAVAILABLE
    if pair is _UNAVAILABLE:
        return None
    parser, builder, driver = pair
    builder.f = source.name
    try:
        if driver is not None:
            try:
                return driver.parse(source.text, start)
            except drive.Stuck:        # Lark's own loop says why (the same callbacks)
                pass
        return parser.parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(syntax_diagnostic(source, exc)) from None
    except reduce.Fallback:
        return None
    finally:
        with _free_lock:
            _free[concrete].append(pair)


def build(name: str, tree):
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
    however deep the tree), saying what nests there: blocks, lists, brackets, calls or
    operators (_too_deep)."""
    stack = [(tree, 1, None)]
    while stack:
        node, depth, up = stack.pop()
        if depth > MAX_NESTING:
            meta = node.meta
            span = Span.at(name, meta.line, meta.column, meta.end_line, meta.end_column) \
                if not meta.empty else Span.at(name, 1, 1)
            rules = []
            while up is not None:
                rules.append(up[0])
                up = up[1]
            raise DiagnosticError(_too_deep(rules, span))
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth + 1, (node.data, up)))


# What nests, by the rules of Lark's tree around the node too deep: (its name, the levels one
# takes, the hint). Anything else is an operator (one level each).
_NESTS = {
    "blocks": ("blocks `{ ... }` nest inside each other", 2,
               "declare the inner parts as templates of their own and place them by name "
               "(`racks = 4 x Rack`), as the examples do"),
    "lists": ("lists `[...]` nest inside each other", 1,
              "flatten the list, or name the inner lists with `let`"),
    "brackets": ("brackets `( ... )` nest inside each other", 1,
                 "remove the brackets that group nothing, or split the expression with "
                 "`let` names"),
    "calls": ("calls nest inside each other's arguments", 2,
              "name the inner calls' results with `let` and pass the names"),
    # `----1`: each unary minus negates all that follows it, one level each
    "negations": ("unary minus signs `-` nest one inside the next", 1,
                  "each `-` negates all that follows it, so a run of them is the value itself "
                  "when the count is even and its negation when it is odd: write `x` or `-x`"),
    "nots": ("`not`s nest one inside the next", 1,
             "each `not` negates all that follows it, so a run of them is the condition itself "
             "when the count is even and its negation when it is odd: write `c` or `not c`"),
}
_RULE_NESTS = {"body": "blocks", "record": "blocks", "decl": "blocks", "list": "lists",
               "paren": "brackets", "call": "calls", "pos_arg": "calls", "kw_arg": "calls",
               "neg": "negations", "not_op": "nots"}


def _too_deep(rules, span: Span) -> Diagnostic:
    """E402 for a node nested past MAX_NESTING, `rules` the names of the rules above it: what
    most of them are is what the user nested."""
    from collections import Counter

    counts = Counter(_RULE_NESTS.get(r) for r in rules)
    kind, levels = max(((k, n) for k, n in counts.items() if k is not None),
                       key=lambda kn: kn[1], default=(None, 0))
    if kind is None or levels * 2 < len(rules):
        return Diagnostic(
            "E402", Severity.ERROR,
            f"expressions nest more than {MAX_NESTING} levels deep here (each operator of "
            f"a chain such as `a + b + c` nests one level)",
            span, "split the expression with `let` names; a long sum of terms "
                  "is `sum([a, b, c, ...])`, a list's items do not nest")
    what, each, hint = _NESTS[kind]
    return Diagnostic("E402", Severity.ERROR,
                      f"{what} more than {MAX_NESTING // each} deep here" + (
                          f" (a file nests at most {MAX_NESTING} levels, each of these takes "
                          f"{each})" if each > 1 else ""), span, hint)


def run(source: Source, start: str):
    try:
        return lark_parser().parse(source.text, start=start)
    except UnexpectedInput as exc:
        raise DiagnosticError(syntax_diagnostic(source, exc)) from None
