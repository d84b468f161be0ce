"""`astral lsp`: the language server (pygls, LSP over stdio).

- diagnostics on open, save and change (debounced), as `astral check` reports them: the front
  end's and the engineering checks' (constraints, power, cooling, network, required scenarios),
  one Diagnostic type for both; a problem in an imported file is shown on its import;
- hover: the evaluated value and unit under the cursor, conversions, the type, and for stdlib
  items the source of the number;
- go to definition and find references, across imports and into the stdlib;
- completion: units, declared names, template parameters, fields, members, stdlib items;
- document symbols and formatting (`astral fmt`).

Positions are converted between the compiler's 1-based code-point columns and the LSP's
0-based UTF-16 (or negotiated) columns in positions.py."""
from __future__ import annotations

import asyncio
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from astral_dsl import __version__
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.lsp.analysis import Analysis, analyse
from astral_dsl.lsp.positions import Lines

log = logging.getLogger("astral.lsp")

_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error,
             Severity.WARNING: lsp.DiagnosticSeverity.Warning,
             Severity.INFO: lsp.DiagnosticSeverity.Information}
MAX_PROJECT_FILES = 200


def uri_path(uri: str) -> Optional[Path]:
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p else None


def path_uri(path: Path) -> str:
    return from_fs_path(str(path.resolve())) or path.resolve().as_uri()


class AstralServer(LanguageServer):
    def __init__(self, debounce: float = 0.3):
        super().__init__("astral", __version__)
        self.debounce = debounce
        self.latest: Dict[str, Analysis] = {}          # uri -> analysis of its latest text
        self.good: Dict[str, Analysis] = {}            # uri -> latest analysis that parsed
        self.pending: Dict[str, asyncio.Task] = {}     # debounced analyses
        self.inflight: Dict[str, Tuple[int, asyncio.Future]] = {}
        self.project: Dict[str, Tuple[float, Analysis]] = {}   # other files, for references
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="astral-analysis")

    # -- documents ---------------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding if self.workspace is not None else None
        return str(getattr(enc, "value", enc) or "utf-16")

    def lines(self, text: str) -> Lines:
        return Lines(text, self.encoding)

    def overlay(self, path: Path) -> Optional[str]:
        """The editor's text of an open document (instead of the file on disk)."""
        for uri, doc in list(self.workspace.text_documents.items()):
            p = uri_path(uri)
            if p is not None and _same(p, path):
                return doc.source
        return None

    def schedule(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.pending[uri] = asyncio.ensure_future(self._after_pause(uri))

    async def _after_pause(self, uri: str) -> None:
        try:
            await asyncio.sleep(self.debounce)
        except asyncio.CancelledError:
            return
        self.pending.pop(uri, None)
        await self.refresh(uri)

    async def refresh(self, uri: str) -> Optional[Analysis]:
        """Analyse the document's current text (once per version) and publish diagnostics."""
        if uri not in self.workspace.text_documents:
            return None
        doc = self.workspace.get_text_document(uri)
        version = doc.version or 0
        hit = self.latest.get(uri)
        if hit is not None and hit.version == version and hit.text == doc.source:
            return hit
        flight = self.inflight.get(uri)
        if flight is not None and flight[0] == version:
            return await asyncio.shield(flight[1])
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, self._analyse, uri, doc.source, version)
        self.inflight[uri] = (version, future)
        try:
            result = await asyncio.shield(future)
        finally:
            if self.inflight.get(uri, (None, None))[1] is future:
                self.inflight.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return result
        current = self.workspace.get_text_document(uri)
        if (current.version or 0) == version:
            self.latest[uri] = result
            if result.parsed:
                self.good[uri] = result
            self.publish(result)
        return result

    def _analyse(self, uri: str, text: str, version: int) -> Analysis:
        try:
            return analyse(uri, uri_path(uri), text, version, self.overlay)
        except Exception as exc:  # noqa: BLE001 - a compiler bug must not stop the server
            log.exception("analysis of %s failed", uri)
            return failed_analysis(uri, uri_path(uri), text, version, exc)

    async def current(self, uri: str) -> Optional[Analysis]:
        """An analysis of exactly the text the editor has now (waiting for it if needed)."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        return await self.refresh(uri)

    def dependents(self, uri: str) -> List[str]:
        """Open documents whose last analysis read the file of `uri`."""
        path = uri_path(uri)
        out = []
        if path is None:
            return out
        for other, a in self.latest.items():
            if other == uri:
                continue
            if any(m.path is not None and _same(m.path, path) for m in a.modules.values()):
                out.append(other)
        return out

    # -- diagnostics -------------------------------------------------------------------------------
    def publish(self, a: Analysis) -> None:
        lines = self.lines(a.text)
        out = [self.to_lsp(d, a, lines) for d in a.diagnostics]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=a.uri, diagnostics=out, version=a.version))

    def to_lsp(self, d: Diagnostic, a: Analysis, lines: Lines) -> lsp.Diagnostic:
        message = d.message
        for note in d.notes:
            message += f"\nnote: {note}"
        if d.hint:
            message += f"\nhint: {d.hint}"
        span = d.span
        if span is not None and span.file != a.entry.name:
            # a problem in an imported file: shown on the import that brings it in
            message = f"{span.file}:{span.start.line}:{span.start.column}: {message}"
            span = _import_span(a, span.file)
        elif span is None and d.filename not in (None, a.entry.name):
            message = f"{d.filename}: {message}"
        return lsp.Diagnostic(range=lines.range(span), severity=_SEVERITY[d.severity],
                              code=d.code, source="astral", message=message)

    # -- other files, for references ---------------------------------------------------------------
    def project_analyses(self, a: Analysis) -> List[Analysis]:
        out = [a]
        open_paths = {}
        for uri in list(self.workspace.text_documents):
            p = uri_path(uri)
            if p is not None:
                open_paths[str(p.resolve())] = uri
            if uri != a.uri and uri in self.good:
                out.append(self.good[uri])
        if a.entry.path is None:
            return out
        from astral_dsl.lsp.analysis import project_files
        from astral_dsl.semantics.modules import project_root

        root = project_root(a.entry.path)
        for path in project_files(root, MAX_PROJECT_FILES):
            key = str(path.resolve())
            if key in open_paths:
                continue
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            hit = self.project.get(key)
            if hit is None or hit[0] != mtime:
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                analysis = analyse(path_uri(path), path, text, None, self.overlay,
                                   engineering=False)
                hit = (mtime, analysis)
                self.project[key] = hit
            out.append(hit[1])
        return out

    def location(self, a: Analysis, span) -> Optional[lsp.Location]:
        module = a.modules.get(span.file)
        if module is None:
            return None
        uri = a.uri if module.is_entry else (path_uri(module.path) if module.path else None)
        if uri is None:
            return None
        text = a.text if module.is_entry else (module.source.text if module.source else "")
        return lsp.Location(uri=uri, range=self.lines(text).range(span))


def failed_analysis(uri: str, path: Optional[Path], text: str, version: int,
                    exc: Exception) -> Analysis:
    """What the editor sees when the compiler itself failed: one diagnostic saying so."""
    from astral_dsl.lsp.analysis import Module
    from astral_dsl.diagnostics import Span

    name = str(path) if path is not None else uri
    entry = Module(name, name, path, None, None, None, False, True)
    d = Diagnostic("E000", Severity.ERROR,
                   f"internal compiler error: {type(exc).__name__}: {exc}", Span.at(name, 1, 1),
                   "this is a bug in astral_dsl, not in your design; please report it")
    return Analysis(uri, version, text, entry, {name: entry}, None, (d,), None)


def _import_span(a: Analysis, file: str):
    """The import of the entry file that leads to `file` (directly, else the first import)."""
    from astral_dsl.syntax import ast

    if a.entry.tree is None:
        return None
    target = a.modules.get(file)
    first = None
    for item in a.entry.tree.items:
        if isinstance(item, ast.Import):
            first = first or item
            if target is not None and item.dotted == target.key:
                return item.span
    return first.span if first is not None else None


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


# ---- features ------------------------------------------------------------------------------------
def build(debounce: float = 0.3) -> AstralServer:
    server = AstralServer(debounce)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AstralServer, params: lsp.DidOpenTextDocumentParams):
        await ls.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: AstralServer, params: lsp.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        ls.schedule(uri)
        for other in ls.dependents(uri):
            ls.schedule(other)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: AstralServer, params: lsp.DidSaveTextDocumentParams):
        uri = params.text_document.uri
        ls.project.clear()
        for other in [uri] + ls.dependents(uri):
            ls.schedule(other)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: AstralServer, params: lsp.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.latest.pop(uri, None)
        ls.good.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri,
                                                                          diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: AstralServer, params: lsp.HoverParams):
        from astral_dsl.lsp.hover import hover as hover_at

        a = await ls.current(params.text_document.uri)
        if a is None or not a.parsed:
            return None
        lines = ls.lines(a.text)
        line, col = lines.from_lsp(params.position)
        found = hover_at(a, a.entry, line, col)
        if found is None:
            return None
        text, span = found
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                         range=lines.range(span))

    async def declaration_at(ls: AstralServer, params):
        """The analysis of the document and the declaration under the cursor (or None)."""
        from astral_dsl.lsp.navigation import Resolver

        a = await ls.current(params.text_document.uri)
        if a is None or not a.parsed:
            return a, None
        line, col = ls.lines(a.text).from_lsp(params.position)
        return a, Resolver(a, a.entry).at(line, col)[1]

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: AstralServer, params: lsp.DefinitionParams):
        a, d = await declaration_at(ls, params)
        return None if d is None else ls.location(a, d.span)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: AstralServer, params: lsp.ReferenceParams):
        from astral_dsl.lsp.navigation import references as find

        a, d = await declaration_at(ls, params)
        if a is None or not a.parsed:
            return None
        if d is None:
            return []
        loop = asyncio.get_running_loop()
        analyses = await loop.run_in_executor(ls.executor, ls.project_analyses, a)
        spans = find(analyses, d, params.context.include_declaration)
        out = []
        for span in spans:
            for candidate in analyses:
                loc = ls.location(candidate, span)
                if loc is not None:
                    out.append(loc)
                    break
        return out

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["."]))
    async def completion(ls: AstralServer, params: lsp.CompletionParams):
        from astral_dsl.lsp.completion import complete

        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        a = ls.good.get(uri)
        if a is None:
            a = await ls.current(uri)
            if a is not None and not a.parsed:
                a = None
        text = doc.source
        lines = ls.lines(text)
        line, col = lines.from_lsp(params.position)
        items = complete(a, text, line - 1, col - 1, ls.encoding)
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def symbols(ls: AstralServer, params: lsp.DocumentSymbolParams):
        from astral_dsl.lsp.symbols import document_symbols

        a = await ls.current(params.text_document.uri)
        if a is None:
            return []
        if not a.parsed:
            a = ls.good.get(params.text_document.uri)
            if a is None:
                return []
        return document_symbols(a.entry.tree, ls.lines(a.text))

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    async def formatting(ls: AstralServer, params: lsp.DocumentFormattingParams):
        from astral_dsl.diagnostics import DiagnosticError
        from astral_dsl.fmt import FormatError, format_text

        doc = ls.workspace.get_text_document(params.text_document.uri)
        try:
            result = format_text(doc.source, params.text_document.uri)
        except (DiagnosticError, FormatError):
            return None          # the diagnostics already say why
        if result == doc.source:
            return []
        lines = ls.lines(doc.source)
        return [lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0),
                                             end=lines.end()), new_text=result)]

    return server


def serve(debounce: float = 0.3) -> None:
    from astral_dsl.stdio import detach_stdout

    logging.basicConfig(level=logging.WARNING)
    protocol = detach_stdout()     # nothing but the protocol ever reaches the client's stream
    build(debounce).start_io(sys.stdin.buffer, protocol)
