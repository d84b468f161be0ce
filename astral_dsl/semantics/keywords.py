"""Names that are keywords wherever a value is read (docs/language.md, 2.3).

Keywords are contextual, so `let import = 3` or `let check = 1` is a constant that reads back
(`import + 1`, `check check == 1`). Four cannot: `true` and `false` are always the yes/no values
(`let true = 0` then `check true` passed with the literal, silently), and `if` and `not` start
an expression where a value is read (`let y = if + 1` was E103 at the `+`). A `let`, `param`,
template, template parameter or loop variable of one of these names is E222 where it is
named; so is a read of `if` or `not` where the parser took it for a name (after an operator
that binds tighter: `1 + not`, `2 * if c then 1 else 0`), which nothing can declare."""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.syntax import ast

UNREADABLE = {"true": "is always the yes/no value `true`",
              "false": "is always the yes/no value `false`",
              "if": "starts an `if ... then ... else` expression",
              "not": "starts a `not` expression"}


def keyword_names(nodes: Iterable[ast.Node], diagnostics: List[Diagnostic]) -> None:
    """E222 for each name declared among `nodes` (a tree's, ast.walk) that no expression can
    read."""
    for node in nodes:
        if isinstance(node, ast.Let):
            _check(node.name, "a `let`", diagnostics)
        elif isinstance(node, ast.Param):
            _check(node.name, "a `param`", diagnostics)
        elif isinstance(node, ast.Decl):
            _check(node.name, f"a {node.kind.name}", diagnostics)
        elif isinstance(node, ast.ParamDef):
            _check(node.name, "a template parameter", diagnostics)
        elif isinstance(node, ast.Comprehension):
            _check(node.var, "a loop variable", diagnostics)


def _check(name: ast.Ident, what: str, diagnostics: List[Diagnostic]) -> None:
    why = UNREADABLE.get(name.name)
    if why is not None:
        diagnostics.append(Diagnostic(
            "E222", Severity.ERROR,
            f"`{name.name}` cannot name {what}: where a value is read, `{name.name}` {why}",
            name.span, f"rename it (e.g. `{name.name}_value`)"))


def read_as_name(name: str) -> Optional[Tuple[str, str]]:
    """(message, hint) of E222 for `if` or `not` read where a value is (the parser reads one as
    a name after an operator that binds tighter than the expression it starts), None for any
    other name."""
    if name not in UNREADABLE or name in ("true", "false"):     # those two always lex as values
        return None
    # imported here, on the error path only: syntax.errors imports lark, which a check whose
    # syntax trees are cached never loads (tests/test_startup.py)
    from astral_dsl.syntax.errors import PARENTHESISED

    return (f"`{name}` cannot be read as a name: where a value is read, `{name}` "
            f"{UNREADABLE[name]}, but here it follows an operator that binds tighter, so it was "
            f"taken for a name", f"put the `{name}` expression in parentheses "
            f"({PARENTHESISED[name]}); nothing can be named `{name}`")
