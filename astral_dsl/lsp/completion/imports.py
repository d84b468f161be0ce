"""Completion of stdlib items (with the `import` edit they need) and of `import` statements:
module paths and the names a module exports."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import List, Optional, Tuple

from lsprotocol import types as lsp

from astral_dsl import records, resources
from astral_dsl.lsp.analysis import Analysis
from astral_dsl.lsp.completion.items import _item
from astral_dsl.lsp.completion.names import _symbol_item
from astral_dsl.syntax import ast


@records.frozen
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
