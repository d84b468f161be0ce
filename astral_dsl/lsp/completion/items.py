"""Completion items of the language itself: keywords, kinds, the fields and enumeration values of
a kind (astral_dsl/model/kinds.py), built-in functions and units; and the item constructor shared
by every completion module."""
from __future__ import annotations

from typing import List, Optional

from lsprotocol import types as lsp

from astral_dsl.model.kinds import KINDS, EnumType, ListType
from astral_dsl.semantics.builtins import BUILTINS
from astral_dsl.semantics.defaults import FORMS
from astral_dsl.units import UNITS

KEYWORDS_TOP = ["import", "param", "let", "check"]
KEYWORDS_BODY = ["let", "check", "fail", "set", "minimize", "maximize"]
KEYWORDS_EXPR = ["if", "then", "else", "and", "or", "not", "for", "in", "to", "x", "true",
                 "false"]
# Compound units people write often (UNITS holds the single ones).
COMPOUND_UNITS = ["Gb/s", "GB/s", "Tb/s", "TB/s", "Mb/s", "MB/s", "GiB/s", "TFLOP/s", "PFLOP/s",
                  "GFLOP/s", "EFLOP/s", "L/min", "L/s", "m^3/h", "m^3/s", "kg/s", "kg/m^3",
                  "BTU/h", "kJ/kg/K", "J/kg/K", "mm^2", "m^2", "ohm*mm^2/m", "W/m^2", "kW/m^2",
                  "USD/kWh", "USD/h"]


# ---- items ---------------------------------------------------------------------------------------
def _item(label, kind, detail=None, doc=None, insert=None, sort="5", edits=None,
          snippet=False) -> lsp.CompletionItem:
    return lsp.CompletionItem(
        label=label, kind=kind, detail=detail,
        documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=doc) if doc else None,
        insert_text=insert, sort_text=f"{sort}{label}", additional_text_edits=edits,
        insert_text_format=lsp.InsertTextFormat.Snippet if snippet else None)


def unit_items() -> List[lsp.CompletionItem]:
    from astral_dsl.units.dimension import dimension_name

    out = []
    for name in COMPOUND_UNITS + sorted(UNITS):
        try:
            from astral_dsl.units import parse_unit

            u = parse_unit(name)
            what = dimension_name(u.dims, u.point)
        except Exception:  # noqa: BLE001
            continue
        common = name in COMPOUND_UNITS or name in ("W", "kW", "MW", "V", "A", "degC", "K", "GB",
                                                  "TB", "h", "min", "s", "%", "U", "USD", "kPa")
        out.append(_item(name, lsp.CompletionItemKind.Unit, what, sort="1" if common else "2"))
    return out


def _dedupe(items):
    seen = set()
    out = []
    for it in items:
        if it.label in seen:
            continue
        seen.add(it.label)
        out.append(it)
    return out


def _keyword_items(words, sort="7"):
    return [_item(w, lsp.CompletionItemKind.Keyword, "keyword", sort=sort) for w in words]


def _kind_items(inside: Optional[str] = None):
    """The kinds that can be declared at the top of a file (`inside` None) or in the body of a
    declaration of kind `inside`: its nested kinds and, in a grouping kind, the physical kinds
    below it (semantics/instantiate.py `nested`: any other is E210 or E403 there)."""
    parent = KINDS.get(inside) if inside is not None else None
    out = []
    for k, spec in KINDS.items():
        if inside is not None:
            below = parent is not None and spec.physical and parent.physical and \
                spec.level < parent.level
            if parent is None or not (k in parent.nested and not (
                    spec.physical and parent.physical) or below and parent.open_members):
                continue
        out.append(_item(k, lsp.CompletionItemKind.Keyword, "kind", spec.doc, sort="6"))
    return out


def _field_items(kind: str) -> List[lsp.CompletionItem]:
    spec = KINDS.get(kind)
    if spec is None:
        return []
    out = []
    for name, f in spec.fields.items():
        doc = f.type.describe() + (f" - {f.doc}" if f.doc else "")
        out.append(_item(name, lsp.CompletionItemKind.Field, f"{kind} field",
                         doc + (" (required)" if f.required else ""), insert=f"{name} = ",
                         sort="1" if f.required else "2"))
    for name, rkind in spec.records.items():
        out.append(_item(name, lsp.CompletionItemKind.Struct, f"{rkind} block",
                         KINDS[rkind].doc, insert=name + " { $0 }", snippet=True, sort="2"))
    return out


def _enum_items(kind: str, field: str) -> List[lsp.CompletionItem]:
    spec = KINDS.get(kind)
    f = spec.fields.get(field) if spec else None
    if f is None:
        return []
    t = f.type.item if isinstance(f.type, ListType) else f.type
    if not isinstance(t, EnumType):
        return []
    return [_item(v, lsp.CompletionItemKind.EnumMember, f"{kind}.{field}", sort="0")
            for v in t.values]


def _builtin_items():
    return [_item(name, lsp.CompletionItemKind.Function, "built-in function", sort="7",
                  insert=f"{name}($0)", snippet=True) for name in sorted({*BUILTINS, *FORMS})]


def rollup_items(kind: str, sort: str) -> List[lsp.CompletionItem]:
    """The roll-ups an instance of `kind` has: the plurals of the kinds below its level (a host
    has gpus, nics and cpus, not racks or pods, whose roll-ups on it are always empty), and
    `power`."""
    from astral_dsl.model.kinds import KINDS
    from astral_dsl.model.rollup import PLURALS

    spec = KINDS.get(kind)
    if spec is None or not spec.physical:
        return []
    names = [p for p, kinds in PLURALS.items()
             if any(KINDS[k].level is not None and KINDS[k].level < spec.level for k in kinds)]
    return [_item(n, lsp.CompletionItemKind.Property, "roll-up", sort=sort)
            for n in names + ["power"]]
