"""The answers of the language server's requests (server.py runs each as a job of its own
thread, within the deadline): hover, the declaration under the cursor, completion, references
across the project's files, the document's outline and its formatting."""
from __future__ import annotations

from typing import Optional

from lsprotocol import types as lsp

from astral_dsl.lsp.analysis import Analysis
from astral_dsl.lsp.documents import AstralServer
from astral_dsl.lsp.positions import Lines


def hover(a: Analysis, encoding: str, position: lsp.Position) -> Optional[lsp.Hover]:
    from astral_dsl.lsp.hover import hover as hover_at

    lines = Lines(a.text, encoding)
    line, col = lines.from_lsp(position)
    found = hover_at(a, a.entry, line, col)
    if found is None:
        return None
    text, span = found
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=lines.range(span))


def declaration(a: Analysis, encoding: str, position: lsp.Position):
    from astral_dsl.lsp.navigation import Resolver

    line, col = Lines(a.text, encoding).from_lsp(position)
    return Resolver(a, a.entry).at(line, col)[1]


def completion(a: Optional[Analysis], text: str, encoding: str, position: lsp.Position):
    from astral_dsl.lsp.completion import complete

    line, col = Lines(text, encoding).from_lsp(position)
    return complete(a, text, line - 1, col - 1, encoding)


def references(ls: AstralServer, a: Analysis, d, include_declaration: bool):
    from astral_dsl.lsp.navigation import references as find

    analyses = ls.project_analyses(a)
    out = []
    for span in find(analyses, d, include_declaration):
        for candidate in analyses:
            loc = ls.location(candidate, span)
            if loc is not None:
                out.append(loc)
                break
    return out


def symbols(tree, text: str, encoding: str):
    """The outline of the analysed tree, else of the text parsed afresh (an analysis that was
    stopped or has not run: the outline needs only the syntax)."""
    from astral_dsl.diagnostics import DiagnosticError
    from astral_dsl.lsp.symbols import document_symbols
    from astral_dsl.syntax.parser import parse
    from astral_dsl.syntax.source import Source

    if tree is None:
        try:
            tree = parse(Source("<outline>", text))
        except DiagnosticError:
            return []
    return document_symbols(tree, Lines(text, encoding))


def formatting(text: str, uri: str, encoding: str):
    from astral_dsl.diagnostics import DiagnosticError
    from astral_dsl.fmt import FormatError, format_text

    try:
        result = format_text(text, uri)
    except (DiagnosticError, FormatError):
        return None          # the diagnostics already say why
    if result == text:
        return []
    lines = Lines(text, encoding)
    return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0),
                                         end=lines.end()), new_text=result)]
