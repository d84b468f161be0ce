"""Bare words in fields that take one of a list of words (an enumeration, or a list of them).

The rule (docs/language.md, 5.3 and 10.11): in such a field, a bare name that is one of the
field's words is that word, whatever else the file names so: a scenario, job, site or template
`rack` does not turn a tier's `scope = rack` into a reference to it, and neither does an import
`as dc` a feeder's `current = dc`. A declaration can never be a word's value, so the word is the
only meaning there. A value the name would otherwise have read (a `let`, `param`, template
parameter, loop variable or field of that name) is W213 at the use: the word still wins, and the
warning names what is not read. Other names are looked up as everywhere else."""
from __future__ import annotations

from functools import lru_cache
from typing import List, Optional

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.kinds import KINDS, EnumType, ListType
from astral_dsl.model.values import Group
from astral_dsl.semantics.frames import Env, Frame
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol
from astral_dsl.syntax import ast


def words_of(type_) -> tuple:
    """The words a field of type `type_` takes bare: an enumeration's values, or its items'."""
    if isinstance(type_, ListType):
        type_ = type_.item
    return type_.values if isinstance(type_, EnumType) else ()


def as_words(expr, type_, env: Env, field: str, diagnostics: List[Diagnostic]):
    """`expr` with each bare name that stands for the field's value itself (the whole value,
    a list's item, a branch of `if`, a comprehension's element) and is one of its words
    replaced by that word as a string (which the field's type takes as the word); the condition of an `if`, a call's arguments
    and arithmetic keep their names. W213 for each such name that a value also has."""
    words = words_of(type_)
    if not words:
        return expr
    expr = _rewrite(expr, words, env, field, diagnostics)
    return _once_each(expr, words, field, diagnostics) if isinstance(expr, ast.ListExpr) else expr


def _once_each(expr: ast.ListExpr, words, field: str, diagnostics) -> ast.ListExpr:
    """The list without the words it names again, E202 at each (as a field set twice in a
    block): `per = [rail, rail]` counts rail once, and was most likely `[rail, plane]`."""
    first: dict = {}
    kept = []
    for item in expr.items:
        word = item.value if isinstance(item, ast.String) and item.value in words else None
        if word is None or word not in first:
            if word is not None:
                first[word] = item.span
            kept.append(item)
            continue
        at = first[word]
        missing = [w for w in words if w not in first]
        meant = f"; or name the one not named: `{field.strip('`')} = " \
                f"[{', '.join(list(first) + missing)}]`" if len(missing) == 1 else ""
        diagnostics.append(Diagnostic(
            "E202", Severity.ERROR, f"`{word}` is already in {field} (at {at.start.line}:"
                                    f"{at.start.column})", item.span,
            "remove one of them: a word named twice counts once" + meant))
    return expr if len(kept) == len(expr.items) else ast.ListExpr(tuple(kept), expr.span)


def _rewrite(expr, words, env: Env, field: str, diagnostics, bound: tuple = ()):
    """`bound`: the variables of the comprehensions around `expr` (values, as a `let`)."""
    if isinstance(expr, ast.Name) and expr.name in words:
        if expr.name in bound:
            _warn_loop_variable(expr, field, diagnostics)
        else:
            _warn_hidden(expr, env, field, diagnostics)
        return ast.String(expr.name, expr.span)
    if isinstance(expr, ast.ListExpr):
        items = tuple(_rewrite(i, words, env, field, diagnostics, bound) for i in expr.items)
        return expr if items == expr.items else ast.ListExpr(items, expr.span)
    if isinstance(expr, ast.If):
        then = _rewrite(expr.then, words, env, field, diagnostics, bound)
        other = _rewrite(expr.other, words, env, field, diagnostics, bound)
        return expr if (then, other) == (expr.then, expr.other) else \
            ast.If(expr.cond, then, other, expr.span)
    if isinstance(expr, ast.Comprehension):
        # `[rail for i in 0..1]`: each element is an item of the list; `[p for p in [rail,
        # plane]]`: the loop variable's values are the items too, so the iterable's are words
        element = _rewrite(expr.element, words, env, field, diagnostics,
                           bound + (expr.var.name,))
        iterable = _rewrite(expr.iterable, words, env, field, diagnostics, bound) \
            if yields_variable(expr) else expr.iterable
        return expr if (element, iterable) == (expr.element, expr.iterable) else \
            ast.Comprehension(element, expr.var, iterable, expr.span)
    return expr


def yields_variable(comp: ast.Comprehension) -> bool:
    """Is the comprehension's variable itself (bare) an item of its list: its whole element,
    or a branch of an `if` that is, so that the iterable's items are the list's?"""
    def stands(expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.name == comp.var.name
        if isinstance(expr, ast.If):
            return stands(expr.then) or stands(expr.other)
        return False
    return stands(comp.element)


def _warn_loop_variable(expr: ast.Name, where: str, diagnostics) -> None:
    """W213 when the word `expr` is also the variable of a comprehension around it."""
    diagnostics.append(Diagnostic(
        "W213", Severity.WARNING,
        f"`{expr.name}` is the word `{expr.name}` in {where} here, not the loop variable "
        f"`{expr.name}`", expr.span,
        f"a bare `{expr.name}` there is always the word: rename the loop variable to use its "
        f"value, or quote the word (`\"{expr.name}\"`) to say so"))


def _warn_hidden(expr: ast.Name, env: Env, where: str, diagnostics) -> None:
    """W213 when the word `expr` also names a value, which is not read."""
    what = _value_named(env, expr.name)
    if what is not None:
        diagnostics.append(Diagnostic(
            "W213", Severity.WARNING,
            f"`{expr.name}` is the word `{expr.name}` in {where} here, not the {what}",
            expr.span,
            f"a bare `{expr.name}` there is always the word: rename the {what.split(' (')[0]} "
            f"to use its value, or quote the word (`\"{expr.name}\"`) to say so"))


def _value_named(env: Env, name: str) -> Optional[str]:
    """What a lookup of `name` in `env` would find when that is a value (not a part or a
    declaration, which can never be a word's value): 'let `x`', 'parameter `x`', ...; else
    None. Nothing is evaluated."""
    scope = env
    while scope is not None:
        if name in scope.locals:
            return f"loop variable `{name}`"
        frame = scope.frame
        if frame is not None and name in frame.defs and not frame.busy.get(name):
            d = frame.defs[name]
            if d.is_let:
                return f"let `{name}` (in {frame.kind} `{frame.display}`)"
            stmt = d.stmt
            if isinstance(stmt, ast.Field) and stmt.body is None:
                return f"field `{name}` of {frame.kind} `{frame.display}`"
            return None                 # a nested part
        if name in scope.params:
            value = scope.params[name]
            return None if isinstance(value, (Frame, Group, Namespace)) else \
                f"parameter `{name}`"
        scope = scope.outer
    symbol = env.module.lookup(name)
    if isinstance(symbol, (LetSymbol, ParamSymbol)):
        span = symbol.node.name.span
        kind = "let" if isinstance(symbol, LetSymbol) else "param"
        return f"{kind} `{name}` (declared at {span.start.line}:{span.start.column})"
    return None


@lru_cache(maxsize=1)
def _enum_peers():
    """word -> every word of every enumeration that has it (`selective` -> `none`, `full`, ...)."""
    out = {}
    for kind in KINDS.values():
        for spec in kind.fields.values():
            values = words_of(spec.type)
            for value in values:
                out.setdefault(value, set()).update(values)
    return {word: frozenset(peers) for word, peers in out.items()}


def compared_word(word: str, expr, env: Env, diagnostics) -> Optional[str]:
    """The word a bare name `expr` compared with the enumeration value `word` stands for
    (`recompute == full`: `full` is a value of an enumeration `selective` belongs to), else None:
    beside such a value a bare word is a word, as in the field itself (W213 likewise)."""
    if isinstance(expr, ast.Name) and expr.name in _enum_peers().get(word, ()):
        _warn_hidden(expr, env, f"a comparison with `{word}`", diagnostics)
        return expr.name
    return None



def in_word_position(chain) -> bool:
    """Is the name at the end of `chain` (the syntax nodes from the module down to it) one of
    the words of the field whose value it stands for, so that it names no declaration? For the
    editor's definitions, references and renames (lsp/navigation.py), which follow the rule of
    `as_words` for a body's fields."""
    leaf = chain[-1]
    below = leaf
    for i in range(len(chain) - 2, -1, -1):
        node = chain[i]
        if isinstance(node, ast.ListExpr) or (isinstance(node, ast.If) and below is not node.cond) \
                or (isinstance(node, ast.Comprehension) and (below is node.element or (
                    below is node.iterable and yields_variable(node)))):
            below = node
            continue
        if isinstance(node, ast.Field) and below is node.value:
            kind = _kind_of(chain[:i])
            spec = KINDS[kind].fields.get(node.name.name) if kind is not None else None
            return spec is not None and leaf.name in words_of(spec.type)
        return False
    return False


def _kind_of(chain) -> Optional[str]:
    """The kind of the body that the last node of `chain` is, if a declaration's or a block's."""
    owner = chain[-1] if chain else None
    if isinstance(owner, ast.Decl):
        return owner.kind.name if owner.kind.name in KINDS else None
    if isinstance(owner, ast.Record):
        outer = _kind_of(chain[:-1])
        return KINDS[outer].records.get(owner.name.name) if outer is not None else None
    return None
