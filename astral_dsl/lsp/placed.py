"""Each diagnostic of an analysis placed in the document being edited (`placed`, run where the
analysis ran, in the worker process): a problem in an imported file shown on the import that
brings it in, its file and position in its message and its place there a related location, each
related span's file named by its URI. No LSP types here: the language server's fork server and
its workers import this without lsprotocol (~0.25 s of imports; lsp/published.py converts the
placed diagnostics to the protocol's)."""
from __future__ import annotations

from typing import Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Related


def placed(a) -> Tuple[Diagnostic, ...]:
    """The diagnostics of the analysis `a`, each with a span in its entry file (or none), and
    its related spans' files named by their URIs (`to_lsp`'s locations)."""
    return tuple(_uris(_place(d, a), a) for d in a.diagnostics)


def _place(d: Diagnostic, a) -> Diagnostic:
    span = d.span
    if span is not None and span.file != a.entry.name:
        # a problem in an imported file: shown on the import that brings it in, where it
        # stands in that file its related location
        where = "the imported file" if span.file in a.modules else "that file"   # a data file
        return attrs.evolve(d, span=_import_span(a, span.file),
                            message=f"{span.file}:{span.start.line}:{span.start.column}: "
                                    f"{d.message}",
                            related=(Related(span, f"where it stands, in {where}"),) + d.related)
    if span is None and d.filename not in (None, a.entry.name):
        return attrs.evolve(d, message=f"{d.filename}: {d.message}")
    return d


def _uris(d: Diagnostic, a) -> Diagnostic:
    """`d` with each related span's file as the URI of its module (kept where it has none)."""
    if not d.related:
        return d
    return attrs.evolve(d, related=tuple(
        attrs.evolve(r, span=attrs.evolve(r.span, file=_uri(a, r.span.file)))
        for r in d.related))


def _uri(a, file: str) -> str:
    """The URI of the file a span names: a module's, else a file of the design's that is no
    module (an inventory's CSV, W231 at its row: named relative to the working directory, as
    display_name names it; its relative name was the location's `uri`; a stdlib one by its
    canonical name: resources.source_file), else `file` as it is (to_lsp then says it in the
    message)."""
    from astral_dsl.lsp.project import path_uri
    from astral_dsl.resources import source_file

    module = a.modules.get(file)
    if module is not None and module.is_entry:
        return a.uri
    if module is not None and module.path is not None:
        return path_uri(module.path)
    try:
        if module is None and source_file(file).is_file():
            return path_uri(source_file(file))
    except (OSError, ValueError):
        pass
    return file


def _import_span(a, file: str):
    """The import of the entry file that leads to `file`: directly, else through the modules it
    imports (the first such import), else the entry's first import."""
    from astral_dsl.syntax import ast

    if a.entry.tree is None:
        return None
    target = a.modules.get(file)
    by_key = {m.key: m for m in a.modules.values() if not m.is_entry}
    imports = [item for item in a.entry.tree.items if isinstance(item, ast.Import)]
    for item in imports:
        if target is not None and _leads_to(item.dotted, target, by_key, set()):
            return item.span
    return imports[0].span if imports else None


def _leads_to(key: str, target, by_key, seen) -> bool:
    """Whether the module `key` is `target` or imports it, directly or not."""
    from astral_dsl.syntax import ast

    module = by_key.get(key)
    if module is None or key in seen:
        return False
    if module is target:
        return True
    seen.add(key)
    return module.tree is not None and any(
        _leads_to(item.dotted, target, by_key, seen)
        for item in module.tree.items if isinstance(item, ast.Import))
