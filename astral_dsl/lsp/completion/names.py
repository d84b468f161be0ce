"""Completion of declared names: the symbols in scope, template parameters and arguments, the
members of enclosing bodies and, after a dot, the members of what a path names in the evaluated
design."""
from __future__ import annotations

import re
from typing import List, Optional

from lsprotocol import types as lsp

from astral_dsl.lsp.analysis import Analysis
from astral_dsl.lsp.completion.context import enclosing_headers
from astral_dsl.lsp.completion.items import _dedupe, _item, rollup_items
from astral_dsl.model.kinds import KINDS
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol, Template
from astral_dsl.syntax import ast


def _symbol_item(name: str, sym, sort="3") -> Optional[lsp.CompletionItem]:
    if isinstance(sym, Template):
        source = next((s.value.value for s in sym.decl.body or ()
                       if isinstance(s, ast.Field) and s.name.name == "source"
                       and isinstance(s.value, ast.String)), None)
        where = sym.module.key
        return _item(name, lsp.CompletionItemKind.Class, f"{sym.kind} ({where})",
                     f"*source:* {source}" if source else None, sort=sort)
    if isinstance(sym, ParamSymbol):
        return _item(name, lsp.CompletionItemKind.Variable, "parameter", sort=sort)
    if isinstance(sym, LetSymbol):
        return _item(name, lsp.CompletionItemKind.Constant, "let", sort=sort)
    if isinstance(sym, Namespace):
        return _item(name, lsp.CompletionItemKind.Module, sym.display, sort=sort)
    return None


def _scope_items(analysis: Optional[Analysis], headers, before: str) -> List[lsp.CompletionItem]:
    out: List[lsp.CompletionItem] = []
    if analysis is None or analysis.entry.scope is None:
        return out
    scope = analysis.entry.scope
    # the enclosing top-level declaration's parameters and the members of enclosing bodies
    if headers:
        top = scope.own.get(headers[0][1])
        if isinstance(top, Template):
            for p in top.decl.params or ():
                out.append(_item(p.name.name, lsp.CompletionItemKind.TypeParameter,
                                 f"parameter of {top.name}" +
                                 (f": {p.type.name}" if p.type else ""), sort="0"))
            body = top.decl.body or ()
            for kind, name in headers[1:]:
                nested = next((s for s in body if isinstance(s, (ast.Decl, ast.Record))
                               and s.name.name == name), None)
                for stmt in body:
                    out.extend(_member_item(stmt))
                body = nested.body if nested is not None and nested.body else ()
            for stmt in body:
                out.extend(_member_item(stmt))
            out.extend(rollup_items(headers[-1][0], sort="4"))
    for name, sym in scope.symbols.items():
        item = _symbol_item(name, sym)
        if item is not None:
            out.append(item)
    return out


def _member_item(stmt) -> List[lsp.CompletionItem]:
    if isinstance(stmt, ast.Field):
        return [_item(stmt.name.name, lsp.CompletionItemKind.Field, "field", sort="1")]
    if isinstance(stmt, ast.Let):
        return [_item(stmt.name.name, lsp.CompletionItemKind.Constant, "let", sort="1")]
    if isinstance(stmt, (ast.Decl, ast.Record)):
        kind = stmt.kind.name if isinstance(stmt, ast.Decl) else "block"
        return [_item(stmt.name.name, lsp.CompletionItemKind.Struct, kind, sort="1")]
    return []


def _argument_items(analysis, callee: str) -> List[lsp.CompletionItem]:
    if analysis is None or analysis.entry.scope is None:
        return []
    parts = callee.split(".")
    sym = analysis.entry.scope.lookup(parts[0])
    if isinstance(sym, Namespace) and len(parts) == 2:
        sym = sym.scope.own.get(parts[1])
    if not isinstance(sym, Template):
        return []
    out = []
    for p in sym.decl.params or ():
        detail = "parameter" + (f": {p.type.name}" if p.type else "")
        out.append(_item(p.name.name, lsp.CompletionItemKind.TypeParameter, detail,
                         insert=f"{p.name.name} = ", sort="0"))
    for name, f in KINDS[sym.kind].fields.items():
        out.append(_item(name, lsp.CompletionItemKind.Field, f"{sym.kind} field",
                         f.type.describe(), insert=f"{name} = ", sort="1"))
    return out


def _member_items(analysis: Optional[Analysis], chain: str, before: str):
    """After `a.b[0].`: the members of what the path names, from the evaluated design."""
    from astral_dsl.model.values import POISON, Group
    from astral_dsl.semantics.frames import Frame

    if analysis is None or analysis.entry.scope is None:
        return []
    parts = [re.sub(r"\[.*\]$", "", p) for p in chain.split(".")]
    scope = analysis.entry.scope
    sym = scope.lookup(parts[0])
    local = _local_member(analysis, enclosing_headers(before), parts[0])
    if local is not None:
        sym = None
    if isinstance(sym, Namespace) and len(parts) == 1:
        return [i for n, s in sym.scope.own.items()
                if (i := _symbol_item(n, s, sort="1")) is not None]
    value = local
    if isinstance(sym, Namespace) and len(parts) >= 2:
        sym = sym.scope.own.get(parts[1])
        parts = parts[1:]
        if not isinstance(sym, Template):
            return []
    if isinstance(sym, Template):
        value = next((f for f in analysis.frames if f.template is sym), None)
        if value is None and len(parts) == 1:     # a template the design does not use
            return _template_fields(sym)
    for part in parts[1:]:
        if isinstance(value, Group):
            value = next((i for _, i in value.flat()), None)
        if not isinstance(value, Frame):
            return []
        value = _member(value, part)
    if isinstance(value, Group):
        value = next((i for _, i in value.flat()), None)
    if not isinstance(value, Frame):
        return []
    out = []
    for name, d in value.defs.items():
        if d.is_let:
            continue
        v = value.values.get(name)
        from astral_dsl.lsp.hover import show_value

        out.append(_item(name, lsp.CompletionItemKind.Field,
                         value.kind if v is None else "in error" if v is POISON else
                         show_value(v), sort="1"))
    out.extend(rollup_items(value.kind, sort="2"))
    if value.kind == "fabric":
        out.append(_item("rail", lsp.CompletionItemKind.Property, "rail[i]", sort="2"))
        out.append(_item("plane", lsp.CompletionItemKind.Property, "plane[A]", sort="2"))
    return _dedupe(out)


def _template_fields(t: Template) -> List[lsp.CompletionItem]:
    """The fields a template declares (in its body or its base's arguments), and those of its
    bases, nearest first, read from the declarations: no instance of it was evaluated."""
    out: List[lsp.CompletionItem] = []
    seen = set()
    while isinstance(t, Template) and id(t) not in seen:
        seen.add(id(t))
        fields = KINDS[t.kind].fields if t.kind in KINDS else {}
        base = t.decl.base
        args = base.args if isinstance(base, ast.Call) else ()
        named = [a.name.name for a in args if a.name is not None and a.name.name in fields] + \
            [s.name.name for s in t.decl.body or () if isinstance(s, ast.Field)]   # (members too)
        for name in named:
            spec = fields.get(name)
            out.append(_item(name, lsp.CompletionItemKind.Field, f"{t.kind} {t.name}",
                             spec.type.describe() if spec is not None else "member", sort="1"))
        base = base.func if isinstance(base, ast.Call) else base
        t = t.module.lookup(base.name) if isinstance(base, ast.Name) else \
            _in_namespace(t.module, base) if isinstance(base, ast.Attr) else None
    return _dedupe(out)


def _in_namespace(module, base: "ast.Attr"):
    """The template `ns.Name` names in `module`, or None."""
    ns = module.lookup(base.obj.name) if isinstance(base.obj, ast.Name) else None
    return ns.scope.own.get(base.name.name) if isinstance(ns, Namespace) else None


def _local_member(analysis: Analysis, headers, name: str):
    """The value of `name` as a member of the declarations enclosing the cursor (innermost
    first), from the evaluated frames of the top-level template."""
    from astral_dsl.model.values import Group
    from astral_dsl.semantics.frames import Frame

    if not headers or analysis.entry.scope is None:
        return None
    top = analysis.entry.scope.own.get(headers[0][1])
    if not isinstance(top, Template):
        return None
    frame = next((f for f in analysis.frames if f.template is top), None)
    frames = []
    for _, nested in headers[1:]:
        if not isinstance(frame, Frame):
            break
        frames.append(frame)
        frame = frame.values.get(nested)
        if isinstance(frame, Group):
            frame = next((i for _, i in frame.flat()), None)
    if isinstance(frame, Frame):
        frames.append(frame)
    for f in reversed(frames):
        if name in f.values:
            return f.values[name]
    return _member(frames[-1], name) if frames else None


def _member(frame, name: str):
    """The value of `name` on `frame`: its field, else its roll-up (`hosts` of a row: the first
    host below it, whose members are those of `hosts[i].`)."""
    from astral_dsl.model.rollup import PLURALS

    if name in frame.values or name not in PLURALS:
        return frame.values.get(name)
    return _first_below(frame, PLURALS[name], set())


def _first_below(frame, kinds, seen):
    """The first instance of one of `kinds` contained in `frame` (members of lower levels only:
    a reference to a loop or a feeder is not containment)."""
    from astral_dsl.model.values import Group
    from astral_dsl.semantics.frames import Frame

    if id(frame) in seen:
        return None
    seen.add(id(frame))
    for value in frame.values.values():
        first = next((i for _, i in value.flat()), None) if isinstance(value, Group) else value
        if not isinstance(first, Frame) or first.spec.level is None or \
                frame.spec.level is None or first.spec.level >= frame.spec.level:
            continue
        if first.kind in kinds:
            return first
        found = _first_below(first, kinds, seen)
        if found is not None:
            return found
    return None
