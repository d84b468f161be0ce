"""Module scopes: what each name at the top of a module means."""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Optional, Set, Union

import attrs

from astral_dsl import records

from astral_dsl.diagnostics import Diagnostic, Severity, Span, did_you_mean
from astral_dsl.model.kinds import KINDS
from astral_dsl.syntax import ast


@lru_cache(maxsize=1)
def _callables():
    """The built-in functions' names (defaults.py imports this module: read on first use)."""
    from astral_dsl.semantics.builtins import BUILTINS
    from astral_dsl.semantics.defaults import FORMS
    return frozenset(BUILTINS) | frozenset(FORMS)


# The symbols are plain classes with `__slots__`, not attrs records: every start builds the
# classes of the modules it imports, and attrs compiles a generated `__init__` for each (these
# four: 3 million instructions of a warm check); a symbol is two fields set once, compared and
# hashed by identity, as the records were (`eq=False`).
class Template:
    """A declaration at the top of a module."""
    __slots__ = ("decl", "module")

    def __init__(self, decl: ast.Decl, module: "ModuleScope"):
        self.decl = decl
        self.module = module

    @property
    def name(self) -> str:
        return self.decl.name.name

    @property
    def kind(self) -> str:
        return self.decl.kind.name


class ParamSymbol:
    __slots__ = ("node", "module")

    def __init__(self, node: ast.Param, module: "ModuleScope"):
        self.node = node
        self.module = module


class LetSymbol:
    __slots__ = ("node", "module")

    def __init__(self, node: ast.Let, module: "ModuleScope"):
        self.node = node
        self.module = module


class Namespace:
    """An imported module's name (`import stdlib.power as p`)."""
    __slots__ = ("scope", "name")

    def __init__(self, scope: "ModuleScope", name: str):
        self.scope = scope
        self.name = name

    @property
    def display(self) -> str:
        return f"module {self.name}"


Symbol = Union[Template, ParamSymbol, LetSymbol, Namespace]


@records.define(eq=False)
class ModuleScope:
    key: str
    file: str
    is_stdlib: bool
    symbols: Dict[str, Symbol] = attrs.field(factory=dict)
    own: Dict[str, Symbol] = attrs.field(factory=dict)       # declared here (exportable)
    spans: Dict[str, Span] = attrs.field(factory=dict)
    checks: List[ast.Check] = attrs.field(factory=list)     # top-level checks
    values: Dict[str, object] = attrs.field(factory=dict)   # evaluated params and lets
    # the names of imports that failed (a cycle E206, a module not found E205...): a use of one
    # is in error already, silently (the import's diagnostic is the root), not E200
    unresolved: Set[str] = attrs.field(factory=set)

    def lookup(self, name: str) -> Optional[Symbol]:
        return self.symbols.get(name)


def missing_hint(target: ModuleScope, dotted: str, name: str) -> Optional[str]:
    """The hint of E208 for `name`, not declared by module `dotted`: where to import it from
    when the module imports it itself (an import is not re-exported), else a near name."""
    symbol = target.symbols.get(name)
    if symbol is None or name in target.own:
        return did_you_mean(name, target.own)
    if isinstance(symbol, Namespace):
        return (f"`{name}` is a module that `{dotted}` imports (imports are not re-exported): "
                f"write `import {symbol.name} as {name}`")
    origin = symbol.module.key
    return (f"`{dotted}` imports `{name}` from `{origin}` and does not re-export it: "
            f"write `import {origin} {{ {name} }}`")


def declare(scope: ModuleScope, name: ast.Ident, symbol: Symbol,
            diagnostics: List[Diagnostic], exported: bool = True) -> None:
    if name.name in scope.symbols:
        first = scope.spans.get(name.name)
        where = f" (first declared at {first.start.line}:{first.start.column})" if first else ""
        diagnostics.append(Diagnostic("E202", Severity.ERROR,
                                      f"`{name.name}` is already declared in this module{where}",
                                      name.span, "rename one of them"))
        return
    scope.symbols[name.name] = symbol
    scope.spans[name.name] = name.span
    if exported:
        scope.own[name.name] = symbol


def _imported_hides_builtin(ident: ast.Ident, symbol: "Template", dotted: str) -> Diagnostic:
    """W214 at an import `{ max }` of a template named as a built-in function: in the importing
    module too, `max(...)` instantiates it (the declaring module's warning is in its own file,
    which may not be the user's)."""
    kind, name = symbol.decl.kind.name, ident.name
    return Diagnostic(
        "W214", Severity.WARNING,
        f"the imported {kind} `{name}` (from `{dotted}`) hides the built-in function `{name}` "
        f"in this module: `{name}(...)` instantiates the template", ident.span,
        f"import the module as a namespace instead (`import {dotted} as m`, then `m.{name}`) "
        f"to keep the built-in, or rename the template in `{dotted}`")


def _unique_parameters(decl: ast.Decl, diagnostics: List[Diagnostic]) -> None:
    """E202 for a template parameter declared twice (`rack R(n, n)`: the second was silently
    the one bound)."""
    seen = {}
    for p in decl.params or ():
        first = seen.setdefault(p.name.name, p.name.span)
        if first is not p.name.span:
            diagnostics.append(Diagnostic(
                "E202", Severity.ERROR,
                f"parameter `{p.name.name}` of `{decl.name.name}` is already declared (at "
                f"{first.start.line}:{first.start.column})", p.name.span,
                "rename one of them, or delete one"))


def build_scope(scope: ModuleScope, tree: ast.Module, resolve_import,
                diagnostics: List[Diagnostic]) -> ModuleScope:
    """Bind the names of one module into `scope` (created before, so that an import cycle sees
    it). `resolve_import(node)` gives the imported ModuleScope or None (the loader has reported
    why)."""
    for item in tree.items:
        if isinstance(item, ast.Import):
            target = resolve_import(item)
            if target is None:
                scope.unresolved.update(i.name for i in item.names or ())
                if item.names is None or item.alias is not None:
                    scope.unresolved.add((item.alias or item.path[-1]).name)
                continue
            if item.names is None:
                alias = item.alias or item.path[-1]
                declare(scope, alias, Namespace(target, item.dotted), diagnostics, exported=False)
                continue
            for ident in item.names:
                symbol = target.own.get(ident.name)
                if symbol is None:
                    diagnostics.append(Diagnostic(
                        "E208", Severity.ERROR,
                        f"module `{item.dotted}` has no declaration `{ident.name}`", ident.span,
                        missing_hint(target, item.dotted, ident.name)))
                    continue
                declare(scope, ident, symbol, diagnostics, exported=False)
                if isinstance(symbol, Template) and ident.name in _callables():
                    diagnostics.append(_imported_hides_builtin(ident, symbol, item.dotted))
            if item.alias is not None:
                declare(scope, item.alias, Namespace(target, item.dotted), diagnostics,
                        exported=False)
        elif isinstance(item, ast.Param):
            declare(scope, item.name, ParamSymbol(item, scope), diagnostics)
        elif isinstance(item, ast.Decl):
            if item.kind.name not in KINDS:
                diagnostics.append(Diagnostic(
                    "E201", Severity.ERROR, f"unknown kind of declaration `{item.kind.name}`",
                    item.kind.span,
                    did_you_mean(item.kind.name, KINDS) or
                    "kinds: " + ", ".join(sorted(KINDS))))
                continue
            declare(scope, item.name, Template(item, scope), diagnostics)
            _unique_parameters(item, diagnostics)
            if item.name.name in _callables():
                diagnostics.append(Diagnostic(
                    "W214", Severity.WARNING,
                    f"{item.kind.name} `{item.name.name}` hides the built-in function "
                    f"`{item.name.name}` in this module: `{item.name.name}(...)` instantiates "
                    f"the template", item.name.span,
                    f"rename the template (e.g. `{item.name.name.capitalize()}"
                    f"{item.kind.name.capitalize()}`) to keep the built-in"))
        elif isinstance(item, ast.Let):
            declare(scope, item.name, LetSymbol(item, scope), diagnostics)
        elif isinstance(item, ast.Check):
            scope.checks.append(item)
        elif isinstance(item, ast.Allow):
            continue                       # collected by semantics/allows.py
        else:
            what = {ast.Field: "a field", ast.Record: "a record", ast.Fail: "`fail`",
                    ast.SetStmt: "`set`", ast.Objective: "an objective"}.get(type(item), "this")
            unnamed = isinstance(item, ast.Record) and item.name.name in KINDS   # `rack { }`
            diagnostics.append(Diagnostic(
                "E210", Severity.ERROR, f"{what} cannot stand at the top of a file",
                item.span, f"a declaration names its template: `{item.name.name} Name {{ ... }}`"
                if unnamed else "put it inside a declaration, e.g. `site Name { ... }`"))
    return scope
