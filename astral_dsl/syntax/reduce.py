"""The AST built in the LALR parser's reductions, without a Lark parse tree.

Lark's usual road builds a `Tree` per rule, works out each tree's positions from its children
(`propagate_positions`), and then a Transformer walks the finished tree again to build the AST:
two objects and two passes per node, most of a large file's parse time. Here the parser's
callbacks (one per rule, called as the rule is reduced) build the AST at once. They do what
Lark's tree builder does, in the same order, so the result is the same:

- a node's extent runs from the first of its children that has a position (a token, or a node
  that is not empty) to the last, the punctuation Lark drops from the tree included (`(` and
  `)` of a bracketed expression, `{` and `}` of a body); Builder's methods get it as their
  `meta`;
- the children a method gets are those Lark would give it: anonymous tokens dropped, the
  children of `_rules` spliced in, `None` for an absent `[optional]` (maybe_placeholders);
- a `?rule` that reduces to a single child passes that child on unchanged;
- a node's height counts the levels of Lark's tree below it (a `_rule` or a passed-on child is
  no level), for the bound on nesting.

Anything unusual leaves this road: a diagnostic raised while building a node (an invalid number
or string), a nesting deeper than parser.MAX_NESTING, or a Lark without the parser internals
used here. The caller then parses on Lark's own road (parser.py), whose diagnostics, in their
order, are the reference. Syntax errors are Lark's, the same on both roads.

With `concrete=True` the callbacks also build the tree of every token that the formatter reads
(fmt/cst.py): the tree Lark builds with `keep_all_tokens`, so a file is parsed once for both."""
from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Dict, List, Optional

from lark import Token, Tree
from lark.grammar import Rule
from lark.visitors import _vargs_meta

from astral_dsl.diagnostics import DiagnosticError


class Fallback(Exception):
    """This text leaves the fast road: parse it on Lark's own (see the module's docstring)."""


class Node:
    """A reduced rule: the value built for it, its extent (Builder's `meta`), its height and,
    for the formatter, its concrete tree."""
    __slots__ = ("value", "empty", "line", "column", "end_line", "end_column", "height",
                 "concrete")

    def __init__(self, first, last, height: int):
        self.height = height
        self.value = self.concrete = None
        if first is None:
            self.empty = True
            return
        self.empty = False
        self.line, self.column = first.line, first.column
        self.end_line, self.end_column = last.end_line, last.end_column


class Inline(Node):
    """A `_rule` (or a repetition Lark made of one): its children go into its parent's."""
    __slots__ = ("children", "raw")


def _measure(raw: List[Any]):
    """(first child with a position, last child with a position, the greatest height of the
    children): the first and last as Lark's propagate_positions finds them."""
    first = last = None
    height = 0
    for c in raw:
        if type(c) is Token:
            if first is None:
                first = c
            last = c
        elif c is not None:
            if c.height > height:
                height = c.height
            if not c.empty:
                if first is None:
                    first = c
                last = c
    return first, last, height


def _plan(rule):
    """Lark's child filter for `rule` (parse_tree_builder.maybe_create_child_filter): for each
    kept child its index, whether it is spliced (a `_rule`) and how many placeholders go
    before it; then the placeholders at the end."""
    empty = rule.options.empty_indices
    if empty:
        s = "".join(str(int(b)) for b in empty)
        nones = [len(ones) for ones in s.split("0")]
    else:
        nones = [0] * (len(rule.expansion) + 1)
    plan, pending = [], 0
    for i, sym in enumerate(rule.expansion):
        pending += nones[i]
        if rule.options.keep_all_tokens or not (sym.is_term and sym.filter_out):
            plan.append((i, not sym.is_term and sym.name.startswith("_"), pending))
            pending = 0
    return tuple(plan), pending + nones[len(rule.expansion)]


PASS = itemgetter(0)     # the callback of a `?rule: child` (drive.py knows it by identity)


def callbacks(rules, builder, concrete: bool, limit: int) -> Dict[Any, Callable]:
    """The parser callbacks of `rules` that build with `builder` (a syntax.build.Builder)."""
    out = {}
    for rule in rules:
        name = rule.alias or rule.options.template_source or rule.origin.name
        plan, trailing = _plan(rule)
        if rule.options.expand1 and not rule.alias and len(rule.expansion) == 1 and \
                len(plan) == 1 and not plan[0][1] and not plan[0][2] and not trailing:
            out[rule] = PASS                     # `?rule: child`: the child itself
            continue
        if name.startswith("_"):
            out[rule] = _inline(plan, trailing, concrete)
            continue
        if rule.options.expand1 and not rule.alias:
            raise Fallback(f"rule {name} is inlined with other children")
        method = getattr(builder, name, None)
        if method is None:
            raise Fallback(f"no builder for rule {name}")
        with_meta = getattr(method, "visit_wrapper", None) is _vargs_meta
        if getattr(method, "visit_wrapper", None) not in (None, _vargs_meta):
            raise Fallback(f"builder of rule {name} takes other arguments")
        if with_meta:                    # the builder's own method: one call less a node
            method = method.base_func
        out[rule] = _node(name, plan, trailing, method, with_meta, concrete, limit)
    return out


def _children(raw, plan, trailing) -> List[Any]:
    kept: List[Any] = []
    for n, (i, splice, nones) in enumerate(plan):
        if nones:
            kept += [None] * nones
        c = raw[i]
        if splice:
            if n == 0 and not nones:
                # a repetition grows by one item per reduction (`expr ("," expr)*`): its list
                # is taken over, not copied, else a list of n items costs n^2 / 2 copies (a
                # 120 kB list took 13 s to format); the spliced node is discarded after this
                kept = c.children
            else:
                kept += c.children
        else:
            kept.append(c if type(c) is Token else c.value)
    if trailing:
        kept += [None] * trailing
    return kept


def _concrete_children(raw) -> List[Any]:
    out: List[Any] = []
    for n, c in enumerate(raw):
        if type(c) is Token:
            out.append(c)
        elif isinstance(c, Inline):
            if n == 0:
                out = c.raw                 # taken over, as in _children
            else:
                out += c.raw
        else:
            out.append(c.concrete)
    return out


def _inline(plan, trailing, concrete: bool) -> Callable:
    def reduce(raw):
        node = Inline(*_measure(raw))
        node.children = _children(raw, plan, trailing)
        node.raw = _concrete_children(raw) if concrete else None
        return node
    if plan and plan[0] == (0, True, 0) and not concrete:
        return _grown(plan[1:], trailing)
    if plan == ((0, False, 0),) and not trailing and not concrete:
        return _one(reduce)
    return reduce


def _one(general: Callable) -> Callable:
    """`general`, the reduction of a `_rule` that keeps its one child, for a lone node child
    (a statement, 37,000 of a 1 MB design's reductions): the Inline takes the child's extent,
    its height and its value at once."""
    def reduce(raw):
        c = raw[0]
        if len(raw) != 1 or type(c) is not Node:
            return general(raw)
        node = _new(Inline)
        node.height, node.value, node.concrete, node.raw = c.height, None, None, None
        node.children = [c.value]
        node.empty = c.empty
        if not c.empty:
            node.line, node.column, node.end_line, node.end_column = \
                c.line, c.column, c.end_line, c.end_column
        return node
    return reduce


def _grown(rest, trailing) -> Callable:
    """A `_rule` whose first child is a `_rule` spliced first (a repetition, `x*`, grows by one
    item per reduction): that child, discarded once spliced, grows into this one in place
    instead of a new one being made (a 1 MB design has 34,000 such reductions)."""
    def reduce(raw):
        node = raw[0]
        if len(raw) > 1:
            first, last, height = _measure(raw)
            if first is not None:
                node.empty = False
                node.line, node.column = first.line, first.column
                node.end_line, node.end_column = last.end_line, last.end_column
            node.height = height
            node.children += _children(raw, rest, trailing)
        elif trailing:
            node.children += [None] * trailing
        return node
    return reduce


def _node(name, plan, trailing, method, with_meta: bool, concrete: bool, limit: int) -> Callable:
    def reduce(raw):
        first, last, height = _measure(raw)
        node = Node(first, last, height + 1)
        if node.height > limit:
            raise Fallback("nested too deeply")
        items = _children(raw, plan, trailing)
        try:
            node.value = method(node, items) if with_meta else method(items)
        except DiagnosticError:
            raise Fallback("a diagnostic") from None
        if concrete:
            node.concrete = Tree(name, _concrete_children(raw))
        return node
    if plan == ((0, False, 0),) and not trailing and not with_meta and not concrete and limit:
        return _token_node(method, reduce)
    return reduce


_new = object.__new__


def _token_node(method, general: Callable) -> Callable:
    """`general`, the reduction of a rule whose one child is kept and whose builder takes no
    `meta` (a number, a name, a string: 38,000 of a 1 MB design's 184,000 reductions), for a
    single token at once: the node is the token's extent, of height 1."""
    def reduce(raw):
        tok = raw[0]
        if len(raw) != 1 or type(tok) is not Token:
            return general(raw)
        node = _new(Node)
        node.height, node.empty, node.concrete = 1, False, None
        node.line, node.column, node.end_line, node.end_column = \
            tok.line, tok.column, tok.end_line, tok.end_column
        try:
            node.value = method(raw)
        except DiagnosticError:
            raise Fallback("a diagnostic") from None
        return node
    return reduce


class _Rule(Rule):
    """A rule of a parser of our own, equal only to itself. Lark's LALR loop looks up each
    reduction's callback by its rule and compares the rule with the end state (`assert arg !=
    end_state`): with Rule's own `__hash__` and `__eq__`, written in Python, that is two Python
    calls per reduction, and a file of 1 MB has 700,000 reductions (about a tenth of its parse
    time). The parse table holds each rule once, so identity is equality here."""
    __slots__ = ()
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def _table_holds(inner, ids) -> bool:
    """Whether every rule the parse table reduces by is one of `ids` (the very objects: rules
    equal only to themselves must be the ones the table holds)."""
    states = getattr(getattr(inner, "parse_table", None), "states", None)
    if not isinstance(states, dict):
        return False
    for actions in states.values():
        for _, arg in actions.values():
            if isinstance(arg, Rule) and id(arg) not in ids:
                return False
    return True


def install(parser, builder, concrete: bool, limit: int) -> Optional[Any]:
    """`parser` (a Lark LALR parser of its own, not shared) with callbacks that build with
    `builder`, or None when this Lark's internals are not the ones known here."""
    table = getattr(parser, "_callbacks", None)
    inner = getattr(getattr(getattr(parser, "parser", None), "parser", None), "parser", None)
    if not isinstance(table, dict) or getattr(inner, "callbacks", None) is not table:
        return None
    keys = list(table)
    if any(not isinstance(k, Rule) for k in keys) or len(keys) != len(parser.rules) or \
            not _table_holds(inner, {id(r) for r in parser.rules}):
        return None
    try:
        for rule in parser.rules:        # the objects of the parse table (keys of `table`)
            rule.__class__ = _Rule
    except TypeError:                    # another layout of Rule: keep Lark's
        pass
    try:
        mine = callbacks(parser.rules, builder, concrete, limit)
    except Fallback:
        return None
    table.clear()                 # the same dict the LALR parser reads: no lexer callbacks here
    table.update(mine)
    return parser
