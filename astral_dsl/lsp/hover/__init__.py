"""Hover: the evaluated value under the cursor with its unit and the conversions people want
(kW and BTU/h, Gb/s and GB/s, ...), its type, and for stdlib items the source of the number."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.diagnostics import Span
from astral_dsl.lsp.analysis import Analysis, Module
from astral_dsl.lsp.hover.lookup import (_decl_frames, _definition_values, _frame_values,
                                         _module_value, _param_values, declared_fields)
from astral_dsl.lsp.hover.provenance import (enclosing_decl, line_comment, provenance,
                                             source_field)
from astral_dsl.lsp.hover.values import (CONVERSIONS, conversions, describe_value, frame_fields,
                                         show_value, type_of)
from astral_dsl.lsp.navigation import Definition, Resolver
from astral_dsl.model.kinds import KINDS
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, parse_unit

__all__ = ["CONVERSIONS", "conversions", "describe_value", "enclosing_decl", "frame_fields",
           "hover", "line_comment", "provenance", "show_value", "source_field", "type_of"]


# ---- hover ---------------------------------------------------------------------------------------
def _field_type(chain, name: str) -> Optional[str]:
    for node in reversed(chain):
        if isinstance(node, ast.Decl):
            spec = KINDS.get(node.kind.name)
            if spec is None:
                return None
            f = spec.fields.get(name)
            if f is None:
                return None
            doc = f" ({f.doc})" if f.doc else ""
            return f"{spec.name} field `{name}`: {f.type.describe()}{doc}"
        if isinstance(node, ast.Record):
            return None
    return None


def _in_entry(analysis: Analysis, definition: Definition) -> bool:
    """Whether the definition is in the file being edited (whose params `--set` and the margins
    vary), not in a module it imports."""
    entry = analysis.entry
    return entry is not None and entry.tree is not None and \
        any(item is definition.node for item in entry.tree.items)


def hover(analysis: Analysis, module: Module, line: int, col: int) -> Optional[Tuple[str, Span]]:
    resolver = Resolver(analysis, module)
    chain, definition = resolver.at(line, col)
    if len(chain) < 2:
        return None
    leaf = chain[-1]
    parent = chain[-2]
    title: Optional[str] = None
    feasible_lines: List[str] = []
    as_written: List[str] = []
    values: List = []
    typed: Optional[str] = None
    span = leaf.span
    if isinstance(leaf, ast.Ident):
        if isinstance(parent, ast.Field) and leaf is parent.name:
            title = f"field `{leaf.name}`"
            values = analysis.values_of(parent.value) or _frame_values(analysis, chain, leaf.name)
            typed = _field_type(chain[:-2], leaf.name)
        elif isinstance(parent, ast.Let) and leaf is parent.name:
            title = f"let `{leaf.name}`"
            values = analysis.values_of(parent.value) or _module_value(module, leaf.name)
        elif isinstance(parent, ast.Param) and leaf is parent.name:
            title = f"parameter `{leaf.name}`" + (f": {parent.type.name}" if parent.type else "")
            values = _module_value(module, leaf.name)
            if module.is_entry:
                from astral_dsl.lsp.hover.margins import param_lines

                feasible_lines = param_lines(analysis, leaf.name)
        elif isinstance(parent, ast.ParamDef) and leaf is parent.name:
            title = f"parameter `{leaf.name}`" + (f": {parent.type.name}" if parent.type else "")
            values = _param_values(analysis, chain, leaf.name)
        elif isinstance(parent, ast.Decl) and leaf is parent.kind:
            spec = KINDS.get(leaf.name)
            if spec is None:
                return None
            fields = ", ".join(f"`{n}`" for n in spec.fields)
            return (f"**{spec.name}**: {spec.doc}\n\nfields: {fields}", leaf.span)
        elif isinstance(parent, ast.Decl) and leaf is parent.name:
            title = f"{parent.kind.name} `{leaf.name}`"
            values = _decl_frames(analysis, parent)
            definition = Definition(leaf.name, leaf.span, "template", parent)
        elif isinstance(parent, ast.Attr) and leaf is parent.name:
            title = f"`{leaf.name}`"
            values = analysis.values_of(parent)
            span = parent.span
        elif isinstance(parent, ast.Arg) and leaf is parent.name:
            title = f"argument `{leaf.name}`"
            values = analysis.values_of(parent.value)
        elif isinstance(parent, ast.Import) and definition is not None:
            title = f"`{leaf.name}`"
            values = _definition_values(analysis, definition)
            if not values and isinstance(definition.node, ast.Decl):
                written = declared_fields(analysis, definition.node)
                if written:
                    as_written = [f"**`{definition.node.kind.name} {leaf.name}`** as declared "
                                  "(the design does not use it yet)  \n" + "  \n".join(written)]
        else:
            return None
    else:
        expr_chain = [n for n in chain if _is_expr(n)]
        if not expr_chain:
            return None
        node = expr_chain[-1]
        for candidate in reversed(expr_chain):
            vs = analysis.values_of(candidate)
            if vs:
                node, values = candidate, vs
                break
        span = node.span
        if isinstance(node, ast.Name):
            title = f"`{node.name}`"
        if not values and isinstance(node, ast.QuantityLit):
            try:
                values = [Quantity.from_unit(node.value, parse_unit(node.unit))]
            except Exception:  # noqa: BLE001 - an unknown unit: the diagnostic says why
                values = []
        if not values and isinstance(node, ast.Number):
            values = [Quantity(node.value)]
        if not values and definition is not None:
            values = _definition_values(analysis, definition)
        if title is None and isinstance(definition, Definition):
            title = f"{definition.what} `{definition.name}`"
        if isinstance(definition, Definition) and isinstance(definition.node, ast.Param) and \
                _in_entry(analysis, definition):
            # a use of one of the file's own params: its feasible range, as on its declaration
            from astral_dsl.lsp.hover.margins import param_lines

            feasible_lines = param_lines(analysis, definition.name)
    parts: List[str] = []
    if title:
        parts.append(title + (f" · {definition.what}" if definition is not None and
                              definition.what not in title else ""))
    for i, v in enumerate(values[:4]):
        parts.append("  \n".join(describe_value(v)))
    if len(values) > 4:
        parts.append(f"... and {len(values) - 4} more values")
    parts.extend(as_written)
    if len(values) > 1:
        parts.insert(1 if title else 0, f"{len(values)} values (the template is instantiated "
                                         "with different arguments):")
    if typed:
        parts.append(typed)
    if feasible_lines:
        parts.append("  \n".join(feasible_lines))
    parts.extend(provenance(analysis, definition))
    if not parts:
        return None
    return "\n\n".join(parts), span


def _is_expr(node) -> bool:
    return type(node) in _EXPR_TYPES


_EXPR_TYPES = {ast.Number, ast.QuantityLit, ast.String, ast.Bool, ast.Name, ast.Attr, ast.Index,
               ast.Call, ast.Binary, ast.Compare, ast.Logic, ast.Not, ast.Neg, ast.If,
               ast.Replicate, ast.Range, ast.ListExpr, ast.Comprehension, ast.Unknown,
               ast.Convert}
