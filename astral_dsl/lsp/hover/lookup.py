"""Hover lookup: the evaluated values of what is under the cursor when the node itself was not
evaluated (a module-level name, the frames of a declaration, a field or parameter across those
frames, what a reference points to)."""
from __future__ import annotations

from typing import List

from astral_dsl.lsp.analysis import Analysis, Module
from astral_dsl.lsp.navigation import Definition
from astral_dsl.semantics.trace import same
from astral_dsl.syntax import ast


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
                if name in f.args and not any(same(f.args[name], o) for o in out):
                    out.append(f.args[name])
            break
    return out


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


def declared_fields(analysis: Analysis, decl: ast.Decl, limit: int = 12) -> List[str]:
    """The fields of a declaration as its file writes them (`power = 700 W`), for a template
    that this design does not instantiate (an import it does not use yet): no value was
    evaluated, but what it declares is worth showing."""
    module = analysis.modules.get(decl.span.file)
    if module is None or module.source is None:
        return []
    fields = [s for s in decl.body or () if isinstance(s, ast.Field)]
    out = []
    for f in fields[:limit]:
        start, end = f.value.span.start, f.value.span.end
        line = module.source.line(start.line)
        value = line[start.column - 1:end.column - 1] if end.line == start.line else \
            line[start.column - 1:].rstrip() + " ..."
        out.append(f"- `{f.name.name} = {value}`")
    if len(fields) > limit:
        out.append("- ...")
    return out
