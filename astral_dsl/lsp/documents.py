"""The language server's state (server.py builds it with its features): the open documents and
their analyses (debounced, once per version, in a worker process that a newer version or the
deadline ends), the diagnostics published for them (a problem in an imported file shown on its
import), the analyses of the project's other files for references, and what the editor sees
when an analysis failed (E000) or ran out of time (E407)."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from astral_dsl import __version__
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.lsp import workers
from astral_dsl.lsp.analysis import Analysis, analyse
from astral_dsl.lsp.positions import Lines
from astral_dsl.lsp.protocol import AstralProtocol, NotOpen, RequestFailed

log = logging.getLogger("astral.lsp")

_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error,
             Severity.WARNING: lsp.DiagnosticSeverity.Warning,
             Severity.INFO: lsp.DiagnosticSeverity.Information}
MAX_PROJECT_FILES = 200
TIMEOUT = 20.0            # seconds an analysis or a request may take (`astral lsp --timeout`)


def uri_path(uri: str) -> Optional[Path]:
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p else None


def path_uri(path: Path) -> str:
    return from_fs_path(str(path.resolve())) or path.resolve().as_uri()


class AstralServer(LanguageServer):
    def __init__(self, debounce: float = 0.3, timeout: float = TIMEOUT):
        super().__init__("astral", __version__, protocol_cls=AstralProtocol)
        self.debounce = debounce
        self.timeout = timeout
        self.latest: Dict[str, Analysis] = {}          # uri -> analysis of its latest text
        self.good: Dict[str, Analysis] = {}            # uri -> latest analysis that parsed
        self.pending: Dict[str, asyncio.Task] = {}     # debounced analyses
        self.inflight: Dict[str, Tuple[int, workers.Job]] = {}
        self.project: Dict[str, Tuple[float, Analysis]] = {}   # other files, for references
        self.checker = workers.Checker()                # the worker processes of analyses
        self.analysed = False                           # the first analysis has finished
        self.files = 0        # counts opened, closed, saved and changed-on-disk files (stale())

    def document(self, uri: str):
        """The open document `uri` (never a file read from disk for an unknown URI)."""
        if uri not in self.workspace.text_documents:
            raise NotOpen(message=f"`{uri}` is not an open document")
        return self.workspace.get_text_document(uri)

    async def job(self, what: str, fn, *args):
        """`fn(*args)` off the event loop within the deadline (RequestFailed after it)."""
        try:
            return await workers.run(what, self.timeout, fn, *args)
        except workers.TimedOut as exc:
            raise RequestFailed(message=str(exc)) from None

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
        """Analyse the document's current text (once per version) and publish diagnostics. A
        newer version cancels the analysis of an older one (its waiters get None)."""
        if uri not in self.workspace.text_documents:
            return None
        doc = self.workspace.get_text_document(uri)
        version, text = doc.version or 0, doc.source
        hit = self.latest.get(uri)
        if hit is not None and hit.version == version and hit.text == text and \
                not self.stale(hit):
            return hit
        texts = self.open_texts(uri)
        flight = self.inflight.get(uri)
        if flight is not None and flight[0] == (version, texts) and flight[1].running:
            job = flight[1]
        else:
            if flight is not None:
                flight[1].cancel()                    # a stale analysis never blocks this one
            stopper = workers.Stopper()
            # the deadline counts the worker's work (workers.Checker), not its start-up
            job = workers.Job(asyncio.get_running_loop(), "the analysis", None,
                              self._analyse, uri, text, version, texts, stopper,
                              on_stop=stopper.stop)
            self.inflight[uri] = ((version, texts), job)
        try:
            result = await self._announced(uri, job.future)
        except workers.Superseded as exc:
            exc.__traceback__ = None       # it held this frame, which holds the job, its holder
            return None
        except workers.TimedOut as exc:
            exc.__traceback__ = None
            result = stopped_analysis(uri, uri_path(uri), text, version, exc)
        finally:
            if self.inflight.get(uri, (None, None))[1] is job and job.future.done():
                self.inflight.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return result
        self.analysed = True
        current = self.workspace.get_text_document(uri)
        if (current.version or 0) == version and self.latest.get(uri) is not result:
            self.latest[uri] = result
            if result.parsed:
                self.good[uri] = result
            self.publish(result)
            if self.stale(result):
                self.schedule(uri)     # an import it read was edited while it ran: again
        return result

    async def _announced(self, uri: str, future) -> Analysis:
        """The analysis's result. The first analysis of the session (the checker's imports,
        CoolProp, sizing's solver...) may take seconds: past PROGRESS_AFTER of them, a client
        that takes work-done progress shows "astral: checking NAME" until it ends."""
        if self.analysed or not _takes_progress(self):
            return await asyncio.shield(future)
        try:
            return await asyncio.wait_for(asyncio.shield(future), progress_after())
        except asyncio.TimeoutError:
            pass
        token = f"astral-first-analysis-{id(future)}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
            self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
                title="astral", message=f"checking {Path(uri).name} (the first analysis)"))
        except Exception:  # noqa: BLE001 - a client that refuses the progress: no progress
            return await asyncio.shield(future)
        try:
            return await asyncio.shield(future)
        finally:
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="checked"))

    def _analyse(self, uri: str, text: str, version: int, texts: Dict[str, str],
                 stopper: workers.Stopper) -> Analysis:
        """The checks in a worker process (ended by `stopper`), then, when they finished, the
        compile in this process that hover and navigation read; both read the other open
        documents' `texts` (by path), the editor's text when the analysis started."""
        path = uri_path(uri)
        try:
            status, found = self.checker.check(stopper, (uri, str(path) if path else None, text,
                                                         texts), self.timeout)
        except workers.TimedOut as exc:
            return stopped_analysis(uri, path, text, version, exc)
        except workers.Stopped as exc:
            if stopper.stopped:
                raise
            status, found = "error", f"the analysis worker ended: {exc}"   # then respawned
        if stopper.stopped:
            raise workers.Stopped("the analysis was cancelled")
        if status != "ok":
            log.error("analysis of %s failed: %s", uri, found)
            return failed_analysis(uri, path, text, version, RuntimeError(found))
        files = self.files
        snapshot = _by_real_path(texts)
        try:
            a = analyse(uri, path, text, version, lambda p: snapshot.get(_real(p)),
                        engineering=False)
        except Exception as exc:  # noqa: BLE001 - a compiler bug must not stop the server
            log.exception("analysis of %s failed", uri)
            return failed_analysis(uri, path, text, version, exc)
        a.diagnostics = found
        for m in a.modules.values():
            if m.path is not None and not m.is_entry and not m.is_stdlib:
                key = _real(m.path)
                a.inputs[key] = (snapshot[key], True) if key in snapshot else \
                    (m.source.text if m.source is not None else None, False)
        a.files = files
        return a

    def stale(self, a: Analysis) -> bool:
        """Whether an analysis no longer holds for its document's text: an imported file it read
        is open with another text now (or was closed, or opened, since), or an import it could
        not find may be found now (a file was opened, closed, saved or changed on disk since)."""
        if a.inputs:
            now = _by_real_path(self.open_texts(a.uri))
            for key, (text, from_editor) in a.inputs.items():
                if (now[key] != text) if key in now else from_editor:
                    return True
        return a.files != self.files and any(d.code == "E205" for d in a.diagnostics)

    def open_texts(self, uri: str) -> Dict[str, str]:
        """The editor's text of the open documents other than `uri`, by path."""
        out = {}
        for other, doc in list(self.workspace.text_documents.items()):
            p = uri_path(other)
            if other != uri and p is not None:
                out[str(p)] = doc.source
        return out

    async def current(self, uri: str) -> Optional[Analysis]:
        """An analysis of exactly the text the editor has now (waiting for it if needed; an
        edit meanwhile restarts the wait on the newer text)."""
        self.document(uri)
        for _ in range(100):
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            result = await self.refresh(uri)
            if result is not None or uri not in self.workspace.text_documents:
                return result
        return None

    def files_event(self, uris: List[str], but: Optional[str] = None) -> None:
        """Files were opened, closed, saved or changed on disk: the open documents (other than
        `but`) whose analysis read one of them, or could not find an import, are checked again
        (their cached analysis is stale: `stale`), and the project scan of references is redone."""
        self.files += 1
        self.project.clear()
        again = set()
        for uri in uris:
            again.update(self.dependents(uri))
        again.update(other for other, a in self.latest.items()
                     if any(d.code == "E205" for d in a.diagnostics))
        for other in sorted(again):
            if other != but and other in self.workspace.text_documents:
                self.schedule(other)

    async def watch_files(self) -> None:
        """Ask a client that can be asked for the changes of .astral files on disk (a file an
        open document imports, deleted, renamed or rewritten by git)."""
        caps = getattr(self, "client_capabilities", None)
        watched = getattr(getattr(caps, "workspace", None), "did_change_watched_files", None)
        if not getattr(watched, "dynamic_registration", False):
            return
        try:
            await asyncio.wait_for(self.client_register_capability_async(lsp.RegistrationParams(
                registrations=[lsp.Registration(
                    id="astral-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[
                        lsp.FileSystemWatcher(glob_pattern="**/*.astral")]))])), 10)
        except Exception as exc:  # noqa: BLE001 - a client that refuses: no file events
            log.warning("the client did not register the file watcher: %s", exc)

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
        from astral_dsl.semantics.modules import project_root, read_file

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
                try:               # the compiler's reading: regular files of at most 8 MiB
                    text = read_file(path).decode("utf-8")
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


def progress_after() -> float:
    """Seconds of a first analysis before it shows progress ($ASTRAL_PROGRESS_DELAY, else 2)."""
    from astral_dsl.outputs.progress import delay

    return delay()


def _takes_progress(ls) -> bool:
    """The client said it shows server-initiated work-done progress."""
    caps = getattr(ls, "client_capabilities", None)
    window = getattr(caps, "window", None)
    return bool(getattr(window, "work_done_progress", False))


def failed_analysis(uri: str, path: Optional[Path], text: str, version: int,
                    exc: Exception) -> Analysis:
    """What the editor sees when the compiler itself failed: one diagnostic saying so."""
    return _unanalysed(uri, path, text, version, Diagnostic(
        "E000", Severity.ERROR, f"internal compiler error: {type(exc).__name__}: {exc}", None,
        "this is a bug in astral_dsl, not in your design; please report it"))


def stopped_analysis(uri: str, path: Optional[Path], text: str, version: int,
                     exc: workers.TimedOut) -> Analysis:
    """What the editor sees when the analysis ran past its deadline (E407)."""
    return _unanalysed(uri, path, text, version, Diagnostic(
        "E407", Severity.ERROR, f"{exc} (the language server's limit): the next edit is "
        f"analysed afresh", None, "run `astral check` on the file for the full report; a "
        "design this slow usually has a huge `for` or replication count, or a very long file"))


def _unanalysed(uri, path, text, version, d: Diagnostic) -> Analysis:
    import attrs

    from astral_dsl.lsp.analysis import Module
    from astral_dsl.diagnostics import Span

    name = str(path) if path is not None else uri
    entry = Module(name, name, path, None, None, None, False, True)
    d = attrs.evolve(d, span=Span.at(name, 1, 1))
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


def _real(path) -> str:
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):
        return str(path)


def _by_real_path(texts: Dict[str, str]) -> Dict[str, str]:
    return {_real(p): t for p, t in texts.items()}


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
