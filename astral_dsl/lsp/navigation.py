"""What is under the cursor, where it is defined, and where it is used.

Names resolve as the evaluator resolves them: comprehension variables, then the parameters and
members (fields, lets, nested declarations, records) of the enclosing declarations, innermost
first, including members inherited from a base template, then the module's declarations and
imports. A member after a dot (`pods[0].racks`, `hvdc.capacity`) resolves through the value the
compiler computed for what is before the dot, so it follows replication, base templates and
arguments; a keyword argument (`HGX8(gpu = H800)`) resolves to the template's parameter or
field."""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.diagnostics import Span
from astral_dsl.lsp.analysis import Analysis, Module
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol, Template
from astral_dsl.semantics.words import in_word_position
from astral_dsl.syntax import ast

_MEMBERS = (ast.Field, ast.Let, ast.Decl, ast.Record)


@records.frozen
class Definition:
    name: str
    span: Span                  # the defining identifier (or the top of a module file)
    what: str                   # template | parameter | field | let | variable | module | ...
    node: object = None         # the defining AST node (Decl, Field, ParamDef, ...)


# ---- finding nodes ------------------------------------------------------------------------------
def _children(node) -> Iterable:
    for name in node._fields:
        v = getattr(node, name)
        if isinstance(v, tuple):
            for x in v:
                if isinstance(x, ast.Node):
                    yield x
        elif isinstance(v, ast.Node):
            yield v


def _inside(span: Span, line: int, col: int, inclusive_end: bool) -> bool:
    start = (span.start.line, span.start.column)
    end = (span.end.line, span.end.column)
    pos = (line, col)
    return start <= pos < end or (inclusive_end and pos == end)


def chain_at(tree: ast.Module, line: int, col: int) -> List:
    """The nodes containing (line, col), outermost first. A position just after a name (where
    the cursor is while typing) counts as on it."""
    for inclusive in (False, True):
        chain = [tree]
        node = tree
        while True:
            nxt = None
            for child in _children(node):
                span = getattr(child, "span", None)
                if span is not None and _inside(span, line, col, inclusive):
                    nxt = child
                    if not inclusive:
                        break
            if nxt is None:
                break
            chain.append(nxt)
            node = nxt
        if len(chain) > 1 and (not inclusive or isinstance(chain[-1], (ast.Ident, ast.Name))):
            return chain
    return [tree]


def chain_to(tree: ast.Module, target) -> Optional[List]:
    """The nodes from the root down to `target` (by identity)."""
    def walk(node, path):
        path.append(node)
        if node is target:
            return True
        for child in _children(node):
            if walk(child, path):
                return True
        path.pop()
        return False

    path: List = []
    return path if walk(tree, path) else None


# ---- resolving ----------------------------------------------------------------------------------
class Resolver:
    def __init__(self, analysis: Analysis, module: Module):
        self.analysis = analysis
        self.module = module

    # -- entry points
    def at(self, line: int, col: int) -> Tuple[List, Optional[Definition]]:
        if self.module.tree is None:
            return [], None
        chain = chain_at(self.module.tree, line, col)
        return chain, self.resolve_chain(chain)

    def resolve_chain(self, chain: List) -> Optional[Definition]:
        leaf = chain[-1]
        parent = chain[-2] if len(chain) > 1 else None
        if isinstance(leaf, ast.Name):
            return self.name(leaf.name, chain)
        if not isinstance(leaf, ast.Ident):
            return None
        if isinstance(parent, ast.Decl):
            if leaf is parent.name:
                return Definition(leaf.name, leaf.span, "declaration", parent)
            return None                                  # the kind
        if isinstance(parent, (ast.Field, ast.Let, ast.Record)) and leaf is parent.name:
            what = {ast.Field: "field", ast.Let: "let", ast.Record: "block"}[type(parent)]
            return Definition(leaf.name, leaf.span, what, parent)
        if isinstance(parent, (ast.ParamDef, ast.Param)) and leaf is parent.name:
            return Definition(leaf.name, leaf.span, "parameter", parent)
        if isinstance(parent, ast.Comprehension) and leaf is parent.var:
            return Definition(leaf.name, leaf.span, "variable", parent)
        if isinstance(parent, ast.Import):
            return self.import_part(parent, leaf)
        if isinstance(parent, ast.Arg) and leaf is parent.name and len(chain) > 2:
            call = chain[-3]
            if isinstance(call, ast.Call):
                return self.keyword(call, leaf.name, chain[:-2])
            return None
        if isinstance(parent, ast.Attr) and leaf is parent.name:
            return self.attribute(parent, chain[:-1])
        return None

    # -- names
    def name(self, name: str, chain: List) -> Optional[Definition]:
        if in_word_position(chain):          # `scope = rack`: the word, not a part named so
            return None
        for i in range(len(chain) - 1, -1, -1):
            node = chain[i]
            below = chain[i + 1] if i + 1 < len(chain) else None
            if isinstance(node, ast.Comprehension) and node.var.name == name and \
                    below is node.element:
                return Definition(name, node.var.span, "variable", node)
            if isinstance(node, ast.Decl):
                for p in node.params or ():
                    if p.name.name == name:
                        return Definition(name, p.name.span, "parameter", p)
                found = self.member(node.body or (), name, below)
                if found is not None:
                    return found
                inherited = self.inherited(node, name, set())
                if inherited is not None:
                    return inherited
            if isinstance(node, ast.Record):
                found = self.member(node.body, name, below)
                if found is not None:
                    return found
        return self.module_symbol(self.module, name)

    @staticmethod
    def member(body, name: str, exclude=None) -> Optional[Definition]:
        """A member of a body; `exclude`: the field being defined (`supply = supply` names the
        outer `supply`)."""
        for stmt in body:
            if isinstance(stmt, _MEMBERS) and stmt.name.name == name and stmt is not exclude:
                what = {ast.Field: "field", ast.Let: "let", ast.Decl: "declaration",
                        ast.Record: "block"}[type(stmt)]
                return Definition(name, stmt.name.span, what, stmt)
        return None

    def inherited(self, decl: ast.Decl, name: str, seen: set) -> Optional[Definition]:
        base = self.base_template(decl)
        if base is None or id(base.decl) in seen:
            return None
        seen.add(id(base.decl))
        found = self.member(base.decl.body or (), name)
        if found is not None:
            return found
        return self.inherited_in(base, name, seen)

    def inherited_in(self, template: Template, name: str, seen: set):
        module = self.module_of_scope(template.module)
        if module is None:
            return None
        return Resolver(self.analysis, module).inherited(template.decl, name, seen)

    def base_template(self, decl: ast.Decl) -> Optional[Template]:
        expr = decl.base
        if isinstance(expr, ast.Call):
            expr = expr.func
        return self.template_of(expr)

    def template_of(self, expr) -> Optional[Template]:
        if isinstance(expr, ast.Name) and self.module.scope is not None:
            sym = self.module.scope.lookup(expr.name)
            return sym if isinstance(sym, Template) else None
        if isinstance(expr, ast.Attr) and isinstance(expr.obj, ast.Name) and \
                self.module.scope is not None:
            ns = self.module.scope.lookup(expr.obj.name)
            if isinstance(ns, Namespace):
                sym = ns.scope.own.get(expr.name.name)
                return sym if isinstance(sym, Template) else None
        return None

    def module_of_scope(self, scope) -> Optional[Module]:
        for m in self.analysis.modules.values():
            if m.scope is scope:
                return m
        return None

    def module_symbol(self, module: Module, name: str) -> Optional[Definition]:
        if module.scope is None:
            return None
        return self.symbol(module.scope.lookup(name), name)

    def symbol(self, sym, name: str) -> Optional[Definition]:
        if isinstance(sym, Template):
            return Definition(name, sym.decl.name.span, "template", sym.decl)
        if isinstance(sym, ParamSymbol):
            return Definition(name, sym.node.name.span, "parameter", sym.node)
        if isinstance(sym, LetSymbol):
            return Definition(name, sym.node.name.span, "let", sym.node)
        if isinstance(sym, Namespace):
            target = self.module_of_scope(sym.scope)
            if target is not None:
                return Definition(name, Span.at(target.name, 1, 1), "module", None)
        return None

    # -- imports
    def import_part(self, node: ast.Import, leaf: ast.Ident) -> Optional[Definition]:
        target = self.imported(node)
        if target is None:
            return None
        if node.names is not None and leaf in node.names and target.scope is not None:
            return self.symbol(target.scope.own.get(leaf.name), leaf.name)
        return Definition(node.dotted, Span.at(target.name, 1, 1), "module", None)

    def imported(self, node: ast.Import) -> Optional[Module]:
        for m in self.analysis.modules.values():
            if m.key == node.dotted and not m.is_entry:
                return m
        return None

    # -- keyword arguments and attributes
    def keyword(self, call: ast.Call, name: str, chain: List) -> Optional[Definition]:
        template = self.template_of(call.func)
        if template is None:
            # a nested call resolved through the compiler's value, e.g. `ns.T(x = 1)`
            return None
        for p in template.decl.params or ():
            if p.name.name == name:
                return Definition(name, p.name.span, "parameter", p)
        found = self.member(template.decl.body or (), name)
        if found is not None:
            return found
        return self.inherited_in(template, name, set())

    def attribute(self, attr: ast.Attr, chain: List) -> Optional[Definition]:
        name = attr.name.name
        for value in self.analysis.values_of(attr.obj):
            found = self.member_of_value(value, name)
            if found is not None:
                return found
        # not evaluated (an error before it, or a `set` target): resolve statically
        if isinstance(attr.obj, ast.Name) and self.module.scope is not None:
            sym = self.name(attr.obj.name, chain[:-1] + [attr.obj])
            if sym is not None and sym.what == "module":
                target = self.module_named(sym.span.file)
                if target is not None and target.scope is not None:
                    return self.symbol(target.scope.own.get(name), name)
            if sym is not None and isinstance(sym.node, ast.Decl):
                found = self.member(sym.node.body or (), name)
                if found is not None:
                    return found
        return None

    def module_named(self, file: str) -> Optional[Module]:
        return self.analysis.modules.get(file)

    def member_of_value(self, value, name: str) -> Optional[Definition]:
        from astral_dsl.model.values import FabricAxis, FabricSelection, Group, Values
        from astral_dsl.semantics.frames import Frame

        if isinstance(value, Namespace):
            return self.symbol(value.scope.own.get(name), name)
        if isinstance(value, Group):
            for _, item in value.flat():
                found = self.member_of_value(item, name)
                if found is not None:
                    return found
            return None
        if isinstance(value, Values):
            for _, item in value.runs:
                found = self.member_of_value(item, name)
                if found is not None:
                    return found
            return None
        if isinstance(value, FabricAxis):
            value = value.selection
        if isinstance(value, FabricSelection):
            value = value.fabric
        if isinstance(value, Frame):
            d = value.defs.get(name)
            if d is not None:
                stmt = d.stmt
                what = {ast.Field: "field", ast.Let: "let", ast.Decl: "declaration",
                        ast.Record: "block"}.get(type(stmt), "field")
                return Definition(name, d.name_span, what, stmt if isinstance(stmt, _MEMBERS)
                                  else None)
        return None


# ---- references ----------------------------------------------------------------------------------
def occurrences(tree: ast.Module, name: str) -> Iterable[Tuple[object, Span]]:
    """Every identifier spelled `name`: (node, span of the name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.name == name:
            yield node, node.span
        elif isinstance(node, ast.Ident) and node.name == name:
            yield node, node.span


def references(analyses: List[Analysis], target: Definition,
               include_declaration: bool = True) -> List[Span]:
    """Where `target` is used, in every module of `analyses`."""
    key = (target.span.file, target.span.start)
    seen = set()
    out: List[Span] = []
    for analysis in analyses:
        for module in analysis.modules.values():
            if module.tree is None:
                continue
            resolver = Resolver(analysis, module)
            for node, span in occurrences(module.tree, target.name):
                where = (span.file, span.start)
                if where in seen:
                    continue
                chain = chain_to(module.tree, node)
                if chain is None:
                    continue
                d = resolver.resolve_chain(chain)
                if d is None or (d.span.file, d.span.start) != key:
                    continue
                if not include_declaration and where == key:
                    continue
                seen.add(where)
                out.append(span)
    return sorted(out, key=lambda s: (s.file, s.start.line, s.start.column))
