"""Hover: the evaluated value under the cursor with its unit and the conversions people want
(kW and BTU/h, Gb/s and GB/s, ...), its type, and for stdlib items the source of the number."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from astral_dsl.diagnostics import Span
from astral_dsl.lsp.analysis import Analysis, Module
from astral_dsl.lsp.navigation import Definition, Resolver
from astral_dsl.model.kinds import KINDS
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number, parse_unit

# Units worth seeing a quantity in, by dimension name (Quantity.dimension()).
CONVERSIONS = {
    "power": ["W", "kW", "MW", "BTU/h", "RT"],
    "energy": ["kWh", "MWh", "MJ", "BTU"],
    "bandwidth": ["Gb/s", "GB/s", "Tb/s", "TB/s"],
    "information": ["GB", "GiB", "TB", "TiB"],
    "compute": ["TFLOP/s", "PFLOP/s"],
    "operations": ["TFLOP", "PFLOP", "EFLOP"],
    "temperature": ["degC", "degF"],
    "temperature difference": ["K", "delta_degF"],
    "flow": ["L/min", "m^3/h", "GPM", "CFM"],
    "pressure": ["kPa", "bar", "psi", "mH2O"],
    "length": ["m", "mm", "ft", "U"],
    "area": ["mm^2", "m^2"],
    "volume": ["L", "m^3", "gal"],
    "time": ["s", "min", "h", "day"],
    "voltage": ["V", "kV"],
    "current": ["A", "kA"],
    "charge": ["Ah"],
    "money": ["USD", "kUSD", "MUSD"],
    "mass": ["kg", "lb", "t"],
    "mass flow": ["kg/s", "kg/h"],
    "frequency": ["Hz", "MHz", "GHz"],
    "resistance": ["ohm", "mohm"],
}


def _round(x: float) -> str:
    if x == 0:
        return "0"
    text = format_number(float(f"{x:.4g}"))
    if "e" not in text and "." not in text and abs(x) >= 10000:
        return f"{int(float(text)):,}"
    return text


def conversions(q: Quantity) -> List[str]:
    if q.dimensionless:
        if q.unit == "%":
            return [format_number(q.si)]
        return [f"{int(q.si):,}"] if float(q.si).is_integer() and abs(q.si) >= 10000 else []
    out = []
    for unit in CONVERSIONS.get(q.dimension(), []):
        if unit == q.unit:
            continue
        try:
            out.append(f"{_round(q.value_in(unit))} {unit}")
        except Exception:  # noqa: BLE001 - a unit that does not apply to this quantity
            continue
    return out


# ---- describing values ---------------------------------------------------------------------------
def show_value(value) -> str:
    from astral_dsl.model.values import (Bundle, FabricAxis, FabricSelection, Group, ListValue,
                                         RangeValue, Symbol, UnknownValue, Values, show)
    from astral_dsl.semantics.frames import Frame

    if isinstance(value, Frame):
        return f"{value.kind} {value.display}"
    if isinstance(value, Group):
        return " + ".join(f"{r.count:,} x {show_value(r.item)}" if not hasattr(r.item, "runs")
                          else f"{r.count:,} x [{show_value(r.item)}]" for r in value.runs)
    if isinstance(value, Bundle):
        return f"{value.count:,} x {value.item}"
    if type(value).__name__ == "Namespace":
        return f"module {value.name}"
    if isinstance(value, FabricAxis):
        return f"{value.selection.display}.{value.axis}"
    if isinstance(value, FabricSelection):
        return value.display
    if isinstance(value, (bool, str, float, Quantity, Symbol, ListValue, RangeValue, Values,
                          UnknownValue)):
        text = show(value)
        return text if len(text) <= 200 else text[:197] + "..."
    return type(value).__name__          # never the repr of an evaluator object


def type_of(value) -> str:
    from astral_dsl.model.values import (Bundle, Group, ListValue, RangeValue, Symbol,
                                         UnknownValue, Values)
    from astral_dsl.semantics.frames import Frame

    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Quantity):
        if value.dimensionless:
            return "ratio" if value.unit == "%" else "number"
        return value.dimension()
    if isinstance(value, Frame):
        return value.kind
    if isinstance(value, Group):
        kinds = sorted({getattr(i, "kind", "?") for _, i in value.flat()})
        return f"group of {value.count:,} ({', '.join(kinds)})"
    if isinstance(value, Bundle):
        return f"bundle of {value.item.dimension()}"
    if isinstance(value, Symbol):
        return "name"
    if isinstance(value, ListValue):
        return "list"
    if isinstance(value, RangeValue):
        return "range"
    if isinstance(value, Values):
        return "values over a group"
    if isinstance(value, UnknownValue):
        return "unknown (chosen by sizing)"
    if type(value).__name__ == "Namespace":
        return "module"
    if type(value).__name__ in ("FabricAxis", "FabricSelection"):
        return "part of a fabric"
    return type(value).__name__


def describe_value(value) -> List[str]:
    """Markdown lines for one value."""
    from astral_dsl.model.values import Bundle, Group
    from astral_dsl.semantics.frames import Frame

    lines = [f"**`{show_value(value)}`** · {type_of(value)}"]
    if isinstance(value, Quantity):
        conv = conversions(value)
        if conv:
            lines.append("= " + " · ".join(f"`{c}`" for c in conv))
    elif isinstance(value, Bundle):
        total = value.total
        lines.append(f"in all `{total}`" + ("" if not conversions(total) else " = " + " · ".join(
            f"`{c}`" for c in conversions(total))))
    elif isinstance(value, Group):
        lines.append(f"{value.count:,} in all")
    elif isinstance(value, Frame):
        lines.extend(frame_fields(value))
    return lines


def frame_fields(frame, limit: int = 12) -> List[str]:
    """`name = value` of an instance's fields (evaluated), for hovering a template or instance."""
    from astral_dsl.model.values import POISON

    rows = []
    for name, d in frame.defs.items():
        if d.is_let or name in ("source", "note"):
            continue
        value = frame.values.get(name)
        if value is None or value is POISON:
            continue
        rows.append(f"- `{name} = {show_value(value)}`")
        if len(rows) >= limit:
            rows.append("- ...")
            break
    return rows


# ---- provenance ----------------------------------------------------------------------------------
_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|(//.*)$')


def line_comment(module: Module, line: int) -> Optional[str]:
    """The `// ...` comment at the end of a line of code (notes beside numbers)."""
    if module.source is None:
        return None
    text = module.source.line(line)
    for m in _COMMENT.finditer(text):
        if m.group(1):
            if not text[:m.start(1)].strip():
                return None                     # a comment line, not a note beside code
            return m.group(1)[2:].strip()
    return None


def enclosing_decl(module: Module, span: Span) -> Optional[ast.Decl]:
    if module.tree is None:
        return None
    for item in module.tree.items:
        if isinstance(item, ast.Decl) and item.span.start <= span.start and \
                span.end <= item.span.end:
            return item
    return None


def source_field(decl: ast.Decl) -> Optional[str]:
    for stmt in decl.body or ():
        if isinstance(stmt, ast.Field) and stmt.name.name == "source" and \
                isinstance(stmt.value, ast.String):
            return stmt.value.value
    return None


def provenance(analysis: Analysis, d: Optional[Definition]) -> List[str]:
    """Where a value comes from: the declaring module, the `source` of a stdlib item, the note
    beside the number."""
    if d is None:
        return []
    module = analysis.modules.get(d.span.file)
    if module is None:
        return []
    out = []
    decl = d.node if isinstance(d.node, ast.Decl) and d.what in ("template", "declaration") \
        else enclosing_decl(module, d.span)
    where = module.key if module.is_stdlib else module.name
    if decl is not None and decl.name.span != d.span:
        out.append(f"defined in {decl.kind.name} `{decl.name.name}` ({where}:{d.span.start.line})")
    else:
        out.append(f"defined in {where}:{d.span.start.line}")
    note = line_comment(module, d.span.start.line)
    if note:
        out.append(f"*note:* {note}")
    if decl is not None:
        source = source_field(decl)
        if source:
            out.append(f"*source:* {source}")
    return out


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


def hover(analysis: Analysis, module: Module, line: int, col: int) -> Optional[Tuple[str, Span]]:
    resolver = Resolver(analysis, module)
    chain, definition = resolver.at(line, col)
    if len(chain) < 2:
        return None
    leaf = chain[-1]
    parent = chain[-2]
    title: Optional[str] = None
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
    parts: List[str] = []
    if title:
        parts.append(title + (f" · {definition.what}" if definition is not None and
                              definition.what not in title else ""))
    for i, v in enumerate(values[:4]):
        parts.append("  \n".join(describe_value(v)))
    if len(values) > 4:
        parts.append(f"... and {len(values) - 4} more values")
    if len(values) > 1:
        parts.insert(1 if title else 0, f"{len(values)} values (the template is instantiated "
                                         "with different arguments):")
    if typed:
        parts.append(typed)
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


def _module_value(module: Module, name: str) -> List:
    from astral_dsl.model.values import POISON

    if module.scope is None or name not in module.scope.values:
        return []
    v = module.scope.values[name]
    return [] if v is POISON else [v]


def _decl_frames(analysis: Analysis, decl: ast.Decl) -> List:
    out = []
    for f in analysis.frames:
        t = getattr(f, "template", None)
        if t is not None and t.decl is decl:
            out.append(f)
    if not out:
        # a nested declaration (`feeder hvdc { ... }`): frames named after it, declared there
        out = [f for f in analysis.frames if f.template is None and f.span == decl.name.span]
    return out[:6]


def _frame_values(analysis: Analysis, chain, name: str) -> List:
    from astral_dsl.model.values import POISON

    out = []
    for node in reversed(chain):
        if isinstance(node, ast.Decl):
            for f in _decl_frames(analysis, node):
                v = f.values.get(name)
                if v is not None and v is not POISON and not any(v is o for o in out):
                    out.append(v)
            break
    return out


def _param_values(analysis: Analysis, chain, name: str) -> List:
    out = []
    for node in reversed(chain):
        if isinstance(node, ast.Decl):
            for f in _decl_frames(analysis, node):
                if name in f.args and not any(_same(f.args[name], o) for o in out):
                    out.append(f.args[name])
            break
    return out


def _same(a, b) -> bool:
    try:
        return a is b or (type(a) is type(b) and bool(a == b))
    except Exception:  # noqa: BLE001
        return False


def _definition_values(analysis: Analysis, d: Definition) -> List:
    """The value of what a name refers to, when the reference itself was not evaluated."""
    if isinstance(d.node, ast.Decl):
        return _decl_frames(analysis, d.node)
    module = analysis.modules.get(d.span.file)
    if module is not None and d.what in ("parameter", "let"):
        values = _module_value(module, d.name)
        if values:
            return values
    if isinstance(d.node, (ast.Field, ast.Let)):
        return analysis.values_of(d.node.value)
    if isinstance(d.node, ast.ParamDef) and d.node.default is not None:
        return analysis.values_of(d.node.default)
    return []
