"""Hover provenance: where a value comes from (the declaring module and declaration, the note
beside the number, the `source` of a stdlib item)."""
from __future__ import annotations

import re
from typing import List, Optional

from astral_dsl.diagnostics import Span
from astral_dsl.lsp.analysis import Analysis, Module
from astral_dsl.lsp.navigation import Definition
from astral_dsl.syntax import ast

# ---- provenance ----------------------------------------------------------------------------------
_COMMENT = re.compile(r'"(?:[^"\\\n]++|\\.)*+"|(//.*)$')


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
