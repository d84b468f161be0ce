"""Completion: units after a number or `to`, declared names, template parameters, fields of the
kind being declared (astral_dsl/model/kinds.py), members after a dot, enumeration values, stdlib
items (with the import they need) and keywords.

The context comes from the text before the cursor (the document is usually unfinished while
typing); what the names mean comes from the last analysis whose entry file parsed."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Tuple

import attrs
from lsprotocol import types as lsp

from astral_dsl import resources
from astral_dsl.lsp.analysis import Analysis
from astral_dsl.model.kinds import KINDS, EnumType, ListType
from astral_dsl.semantics.builtins import BUILTINS
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol, Template
from astral_dsl.syntax import ast
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

_NUMBER_UNIT = re.compile(r"(?<![\w.])(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
                          r"[ \t]*(?P<unit>[A-Za-z\u00b0\u00b5%][\w/*^\u00b0\u00b5]*)?$")
_TO_UNIT = re.compile(r"\bto[ \t]+(?P<unit>[\w/*^\u00b0\u00b5%]*)$")
_IMPORT_PATH = re.compile(r"^\s*import\s+(?P<path>[\w.]*)$")
_IMPORT_NAMES = re.compile(r"^\s*import\s+(?P<path>[\w.]+)\s*\{[^}]*$")
_DOTTED = re.compile(r"(?P<chain>[A-Za-z_]\w*(?:\[[^\[\]]*\])?(?:\.[A-Za-z_]\w*(?:\[[^\[\]]*\])?)*)"
                     r"\.(?P<partial>[A-Za-z_]\w*)?$")
_HEADER = re.compile(r"^\s*(?P<kind>[A-Za-z_]\w*)\s+(?P<name>[A-Za-z_]\w*)\b")
_FIELD_VALUE = re.compile(r"(?:^|[{,;(]|\s)(?P<field>[A-Za-z_]\w*)\s*=\s*(?P<rest>[^=]*)$")


@attrs.frozen
class StdlibItem:
    name: str
    kind: str
    module: str            # stdlib.hardware
    source: Optional[str]


@lru_cache(maxsize=1)
def stdlib_items() -> Tuple[StdlibItem, ...]:
    from astral_dsl.syntax.parser import parse
    from astral_dsl.syntax.source import Source

    out = []
    for path in sorted(resources.stdlib_dir().glob("*.astral")):
        key = f"stdlib.{path.stem}"
        try:
            tree = parse(Source(key, path.read_text(encoding="utf-8")))
        except Exception:  # noqa: BLE001 - a broken stdlib file offers nothing
            continue
        for item in tree.items:
            if isinstance(item, ast.Decl):
                source = next((s.value.value for s in item.body or ()
                               if isinstance(s, ast.Field) and s.name.name == "source"
                               and isinstance(s.value, ast.String)), None)
                out.append(StdlibItem(item.name.name, item.kind.name, key, source))
    return tuple(out)


# ---- context -------------------------------------------------------------------------------------
def enclosing_headers(text_before: str) -> List[Tuple[str, str]]:
    """The (kind, name) of the declarations whose `{` is still open before the cursor,
    outermost first, found by scanning braces (strings and comments skipped)."""
    stack: List[Optional[Tuple[str, str]]] = []
    i, n = 0, len(text_before)
    line_start = 0
    while i < n:
        ch = text_before[i]
        if ch == "\n":
            line_start = i + 1
        elif ch == '"':
            j = i + 1
            while j < n and text_before[j] not in '"\n':
                j += 2 if text_before[j] == "\\" else 1
            i = j
        elif text_before.startswith("//", i):
            j = text_before.find("\n", i)
            i = n if j < 0 else j - 1
        elif text_before.startswith("/*", i):
            j = text_before.find("*/", i + 2)
            i = n if j < 0 else j + 1
        elif ch == "{":
            header = _strip_brackets(text_before[line_start:i])
            # the header may end a previous statement on the same line: take the last one
            head = re.split(r"[,;{]", header)[-1]
            m = _HEADER.match(head)
            if m and m.group("kind") != "import":
                stack.append((m.group("kind"), m.group("name")))
            elif re.match(r"^\s*[A-Za-z_]\w*\s*$", head):
                stack.append(("record", head.strip()))
            else:
                stack.append(None)
        elif ch == "}":
            if stack:
                stack.pop()
        i += 1
    return [h for h in stack if h is not None]


def _strip_brackets(text: str) -> str:
    """`host N(p = 1) = B(x = 2, y = 3) ` -> `host N = B `."""
    out, depth = [], 0
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def open_call(text_before: str) -> Optional[str]:
    """The callee of the innermost `(` still open on the current statement, if any."""
    depth = 0
    for i in range(len(text_before) - 1, -1, -1):
        ch = text_before[i]
        if ch in ")]":
            depth += 1
        elif ch in "[":
            if depth == 0:
                return None
            depth -= 1
        elif ch == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_][\w.]*)\s*$", text_before[:i])
                return m.group(1) if m else None
            depth -= 1
        elif ch in "{}\n" and depth == 0 and ch != "\n":
            return None
    return None


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


def complete(analysis: Optional[Analysis], text: str, line0: int, char_cp: int,
             encoding: str = "utf-16") -> List[lsp.CompletionItem]:
    lines = text.split("\n")
    line = lines[line0] if line0 < len(lines) else ""
    prefix = line[:char_cp]
    before = "\n".join(lines[:line0] + [prefix])
    if _in_comment_or_string(prefix):
        return []
    m = _IMPORT_PATH.match(prefix)
    if m:
        return _module_items(analysis, m.group("path"))
    m = _IMPORT_NAMES.match(prefix)
    if m:
        return _export_items(analysis, m.group("path"))
    if _TO_UNIT.search(prefix) or _NUMBER_UNIT.search(prefix):
        return unit_items()
    m = _DOTTED.search(prefix)
    if m and not re.search(r"\d\.$", prefix):
        return _member_items(analysis, m.group("chain"), before)
    headers = enclosing_headers(before)
    items: List[lsp.CompletionItem] = []
    statement_start = re.match(r"^\s*[A-Za-z_]*$", prefix) is not None or \
        re.search(r"[{,;]\s*[A-Za-z_]*$", prefix) is not None and open_call(prefix) is None
    callee = open_call(before)
    fv = _FIELD_VALUE.search(prefix)
    if callee is not None and not _in_argument_value(before):
        items.extend(_argument_items(analysis, callee))
    if statement_start and callee is None:
        if headers:
            items.extend(_field_items(headers[-1][0]))
            items.extend(_keyword_items(KEYWORDS_BODY))
            items.extend(_kind_items())
        else:
            items.extend(_keyword_items(KEYWORDS_TOP))
            items.extend(_kind_items())
        return items
    if fv is not None and headers:
        items.extend(_enum_items(headers[-1][0], fv.group("field")))
    items.extend(_scope_items(analysis, headers, before))
    items.extend(_stdlib_items(analysis, text))
    items.extend(_builtin_items())
    items.extend(_keyword_items(KEYWORDS_EXPR, sort="8"))
    return _dedupe(items)


def _in_argument_value(before: str) -> bool:
    """Inside `T(a = 1, b = |`: after the `=` of the current argument."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        ch = before[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                return "=" in before[i + 1:]
            depth -= 1
        elif ch == "," and depth == 0:
            return "=" in before[i + 1:]
    return False


def _dedupe(items):
    seen = set()
    out = []
    for it in items:
        if it.label in seen:
            continue
        seen.add(it.label)
        out.append(it)
    return out


def _in_comment_or_string(prefix: str) -> bool:
    in_string = False
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif prefix.startswith("//", i):
            return True
        i += 1
    return in_string


def _keyword_items(words, sort="7"):
    return [_item(w, lsp.CompletionItemKind.Keyword, "keyword", sort=sort) for w in words]


def _kind_items():
    return [_item(k, lsp.CompletionItemKind.Keyword, "kind", spec.doc, sort="6")
            for k, spec in KINDS.items()]


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
                  insert=f"{name}($0)", snippet=True) for name in sorted(BUILTINS)]


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
            spec = KINDS.get(headers[-1][0])
            if spec is not None and spec.physical:
                from astral_dsl.model.rollup import PLURALS

                for plural in list(PLURALS) + ["power"]:
                    out.append(_item(plural, lsp.CompletionItemKind.Property, "roll-up",
                                     sort="4"))
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


def _stdlib_items(analysis: Optional[Analysis], text: str) -> List[lsp.CompletionItem]:
    """Every stdlib declaration; one not imported yet brings its import along."""
    out = []
    imported = set(analysis.entry.scope.symbols) if analysis is not None and \
        analysis.entry.scope is not None else set()
    lines = text.split("\n")
    for item in stdlib_items():
        edits = None if item.name in imported else _import_edit(lines, item)
        doc = f"{item.kind} from `{item.module}`" + (f"\n\n*source:* {item.source}"
                                                     if item.source else "")
        out.append(_item(item.name, lsp.CompletionItemKind.Class, f"{item.kind} ({item.module})",
                         doc, sort="4", edits=edits))
    return out


def _import_edit(lines: List[str], item: StdlibItem) -> List[lsp.TextEdit]:
    """Add `item` to the file's `import stdlib.X { ... }` line, or add that line."""
    pattern = re.compile(r"^\s*import\s+" + re.escape(item.module) + r"\s*\{(?P<names>[^}]*)\}")
    last_import = -1
    for i, line in enumerate(lines):
        m = pattern.match(line)
        if m:
            names = m.group("names")
            if names.strip():
                at = m.start("names") + len(names.rstrip())
                return [_insert(i, line, at, ", " + item.name)]
            start, end = m.start("names"), m.end("names")
            return [lsp.TextEdit(lsp.Range(lsp.Position(line=i, character=_u16(line, start)),
                                           lsp.Position(line=i, character=_u16(line, end))),
                                 f" {item.name} ")]
        if re.match(r"^\s*import\b", line):
            last_import = i
    row = last_import + 1 if last_import >= 0 else _after_header(lines)
    pos = lsp.Position(line=row, character=0)
    return [lsp.TextEdit(lsp.Range(pos, pos), f"import {item.module} {{ {item.name} }}\n")]


def _insert(row: int, line: str, cp: int, text: str) -> lsp.TextEdit:
    pos = lsp.Position(line=row, character=_u16(line, cp))
    return lsp.TextEdit(lsp.Range(pos, pos), text)


def _u16(line: str, cp: int) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in line[:cp])


def _after_header(lines: List[str]) -> int:
    i = 0
    while i < len(lines) and lines[i].strip().startswith("//"):
        i += 1
    return i


def _module_items(analysis, partial: str) -> List[lsp.CompletionItem]:
    out = []
    if partial.startswith("stdlib.") or "stdlib".startswith(partial):
        for path in sorted(resources.stdlib_dir().glob("*.astral")):
            out.append(_item(f"stdlib.{path.stem}", lsp.CompletionItemKind.Module, "stdlib"))
    if analysis is not None and analysis.entry.path is not None:
        from astral_dsl.semantics.modules import project_root

        from astral_dsl.lsp.analysis import project_files

        root = project_root(analysis.entry.path)
        for path in project_files(root):
            rel = path.relative_to(root).with_suffix("")
            dotted = ".".join(rel.parts)
            if path.resolve() != analysis.entry.path.resolve():
                out.append(_item(dotted, lsp.CompletionItemKind.Module, "project module"))
    return out


def _export_items(analysis, dotted: str) -> List[lsp.CompletionItem]:
    out = []
    if analysis is not None:
        for m in analysis.modules.values():
            if m.key == dotted and m.scope is not None:
                for name, sym in m.scope.own.items():
                    item = _symbol_item(name, sym, sort="1")
                    if item is not None:
                        out.append(item)
                return out
    for item in stdlib_items():
        if item.module == dotted:
            out.append(_item(item.name, lsp.CompletionItemKind.Class,
                             f"{item.kind} ({item.module})", item.source, sort="1"))
    return out


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
    from astral_dsl.model.rollup import PLURALS
    from astral_dsl.model.values import Group
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
    if isinstance(sym, Template):
        value = next((f for f in analysis.frames if f.template is sym), None)
    elif isinstance(sym, Namespace) and len(parts) >= 2:
        t = sym.scope.own.get(parts[1])
        value = next((f for f in analysis.frames if f.template is t), None)
        parts = parts[1:]
    for part in parts[1:]:
        if isinstance(value, Group):
            value = next((i for _, i in value.flat()), None)
        if not isinstance(value, Frame):
            return []
        value = value.values.get(part)
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
                         show_value(v) if v is not None else value.kind, sort="1"))
    if value.spec.physical:
        for plural in list(PLURALS) + ["power"]:
            out.append(_item(plural, lsp.CompletionItemKind.Property, "roll-up", sort="2"))
    if value.kind == "fabric":
        out.append(_item("rail", lsp.CompletionItemKind.Property, "rail[i]", sort="2"))
        out.append(_item("plane", lsp.CompletionItemKind.Property, "plane[A]", sort="2"))
    return _dedupe(out)


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
    return None
