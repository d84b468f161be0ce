"""Document symbols (the outline): imports, parameters, lets, declarations with their nested
declarations, blocks, fields and lets."""
from __future__ import annotations

from typing import List

from lsprotocol import types as lsp

from astral_dsl.lsp.positions import Lines
from astral_dsl.model.kinds import KINDS
from astral_dsl.syntax import ast

_K = lsp.SymbolKind
_KIND_SYMBOL = {"site": _K.Module, "job": _K.Event, "scenario": _K.Event, "model": _K.Class,
                "fabric": _K.Interface, "power": _K.Package, "cooling": _K.Package}


def _symbol(lines: Lines, name: str, detail: str, kind, node_span, name_span, children=None):
    return lsp.DocumentSymbol(name=name or "?", detail=detail, kind=kind,
                              range=lines.range(node_span), selection_range=lines.range(name_span),
                              children=children or None)


def document_symbols(tree: ast.Module, lines: Lines) -> List[lsp.DocumentSymbol]:
    out = []
    for item in tree.items:
        s = _item(item, lines, top=True)
        if s is not None:
            out.append(s)
    return out


def _item(item, lines: Lines, top: bool = False):
    if isinstance(item, ast.Import):
        return _symbol(lines, item.dotted, "import", _K.Module, item.span,
                       item.path[-1].span.to(item.path[0].span))
    if isinstance(item, ast.Param):
        return _symbol(lines, item.name.name, "param" + (f": {item.type.name}" if item.type
                                                         else ""),
                       _K.Variable, item.span, item.name.span)
    if isinstance(item, ast.Let):
        return _symbol(lines, item.name.name, "let", _K.Constant, item.span, item.name.span)
    if isinstance(item, ast.Decl):
        children = [c for c in (_item(s, lines) for s in item.body or ()) if c is not None]
        kind = _KIND_SYMBOL.get(item.kind.name, _K.Class if top else _K.Struct)
        spec = KINDS.get(item.kind.name)
        detail = item.kind.name + (f" - {spec.doc}" if spec is not None and top else "")
        return _symbol(lines, item.name.name, detail, kind, item.span, item.name.span, children)
    if isinstance(item, ast.Record):
        children = [c for c in (_item(s, lines) for s in item.body) if c is not None]
        return _symbol(lines, item.name.name, "block", _K.Struct, item.span, item.name.span,
                       children)
    if isinstance(item, ast.Field):
        return _symbol(lines, item.name.name, "field", _K.Field, item.span, item.name.span)
    return None
