"""What the editor is shown of an analysis's diagnostics: each placed in the document being
edited (lsp/placed.py, run where the analysis ran, in the worker process), then converted to
the LSP's (`to_lsp`: related spans as relatedInformation, the stdlib's line of a template the
user's line brings in); and the one
diagnostic of an analysis that failed (E000), ran out of time (E407) or out of memory (E410)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Dict, Optional

import attrs
from lsprotocol import types as lsp

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.lsp.positions import Lines

_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error,
             Severity.WARNING: lsp.DiagnosticSeverity.Warning,
             Severity.INFO: lsp.DiagnosticSeverity.Information}


def to_lsp(d: Diagnostic, lines: Lines, lines_of: Optional[Callable] = None,
           related: bool = True) -> lsp.Diagnostic:
    """A placed diagnostic as the LSP's (its notes and hint in the message); its related spans
    as relatedInformation (`lines_of(uri)`: the Lines of that file, for its columns; None:
    read as code points), or notes in the message for a client that does not show them
    (`related` False)."""
    message = d.message
    for note in d.notes:
        message += f"\nnote: {note}"
    if d.hint:
        message += f"\nhint: {d.hint}"
    info = None
    # a location is a URI: a related span whose file has none is a note in the message
    located = [r for r in d.related if related and _SCHEME.match(r.span.file)]
    if located:
        info = [lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=r.span.file,
                                  range=((lines_of and lines_of(r.span.file)) or _NONE)
                                  .range(r.span)),
            message=r.message) for r in located]
    message += "".join(f"\nnote: {r.message} ({_shown(r.span)})" for r in d.related
                       if r not in located)
    return lsp.Diagnostic(range=lines.range(d.span), severity=_SEVERITY[d.severity],
                          code=d.code, source="astral", message=message,
                          related_information=info)


_NONE = Lines("")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")   # a URI's scheme (not a drive letter)


def _shown(span) -> str:
    """`file:line:column` of a related span whose file is a URI (`_uris`), as a path."""
    from astral_dsl.lsp.project import uri_path

    path = uri_path(span.file) if span.file.startswith("file:") else None
    return f"{path if path is not None else span.file}:{span.start.line}:{span.start.column}"


def converted(ls, found, text: str, uri: str) -> list:
    """The placed diagnostics `found` of the document `uri` of `text` as the LSP's, for the
    server `ls`: their related spans (the stdlib's line of a template the user's line brings
    in) as relatedInformation when the client said it takes it, else as notes in the message.
    A related span in the document itself is placed in `text` (an untitled buffer has no file
    to read: its columns were code points, not the client's units); one in another file in
    the editor's text of it, else in the file read as the compiler reads a source
    (semantics/source_files.py read_file: a FIFO or a device refused at once, not waited on)."""
    from astral_dsl.lsp.project import uri_path
    from astral_dsl.semantics.source_files import read_file

    lines = ls.lines(text)
    others: Dict[str, Optional[Lines]] = {uri: lines}

    def lines_of(other_uri: str) -> Optional[Lines]:
        if other_uri not in others:
            path = uri_path(other_uri)
            other = ls.overlay(path) if path is not None else None
            if other is None and path is not None:
                try:
                    other = read_file(path).decode("utf-8")
                except (OSError, UnicodeError):
                    other = None
            others[other_uri] = ls.lines(other) if other is not None else None
        return others[other_uri]

    caps = getattr(getattr(ls, "client_capabilities", None), "text_document", None)
    shown = getattr(getattr(caps, "publish_diagnostics", None), "related_information", None)
    return [to_lsp(d, lines, lines_of, shown is True) for d in found]


def failed_analysis(uri: str, path: Optional[Path], text: str, version: int, exc: Exception):
    """What the editor sees when the compiler itself failed: one diagnostic saying so."""
    return _unanalysed(uri, path, text, version, Diagnostic(
        "E000", Severity.ERROR, f"internal compiler error: {type(exc).__name__}: {exc}", None,
        "this is a bug in astral_dsl, not in your design; please report it"))


def stopped_analysis(uri: str, path: Optional[Path], text: str, version: int, exc):
    """What the editor sees when the analysis ran past its deadline (E407)."""
    return _unanalysed(uri, path, text, version, Diagnostic(
        "E407", Severity.ERROR, f"{exc} (the language server's limit): the next edit is "
        f"analysed afresh", None, "run `astral check` on the file for the full report; a "
        "design this slow usually has a huge `for` or replication count, or a very long file"))


def memory_analysis(uri: str, path: Optional[Path], text: str, version: int,
                    limit: Optional[int]):
    """What the editor sees when the analysis passed the worker's memory limit (E410)."""
    what = (f"needed more than {limit / (1 << 30):g} GiB of memory beyond its start and was "
            f"stopped (the language server's limit)" if limit else
            "ran out of memory and was stopped")
    return _unanalysed(uri, path, text, version, Diagnostic(
        "E410", Severity.ERROR, f"the analysis {what}: the next edit is analysed afresh", None,
        "run `astral check` on the file for the full report; a design this large usually has a "
        "huge `for` or replication count, or a very long file"))


def uncompiled(uri: str, path: Optional[Path], text: str, version: int, found, seconds: float):
    """What the editor sees when the worker's check answered (`found`, its diagnostics, which
    are complete) but the server's compile for hover and navigation ran past its deadline:
    those diagnostics and an E407 warning saying that hover and navigation wait for the next
    edit."""
    a = _unanalysed(uri, path, text, version, Diagnostic(
        "E407", Severity.WARNING, f"the language server's compile for hover and navigation "
        f"took longer than {seconds:g} s and was stopped (the language server's limit): the "
        f"diagnostics are complete, hover and go to definition wait for the next edit", None,
        "a design this slow usually has a huge `for` or replication count, or a very long "
        "file"))
    a.diagnostics = tuple(found) + a.diagnostics
    return a


def _unanalysed(uri, path, text, version, d: Diagnostic):
    from astral_dsl.diagnostics import Span
    from astral_dsl.lsp.analysis import Analysis, Module

    name = str(path) if path is not None else uri
    entry = Module(name, name, path, None, None, None, False, True)
    d = attrs.evolve(d, span=Span.at(name, 1, 1))
    return Analysis(uri, version, text, entry, {name: entry}, None, (d,), None)
