"""The language server's state (server.py builds it with its features): the open documents and
their analyses (debounced, once per version, in a worker process that a newer version or the
deadline ends; the worker's diagnostics published as soon as it answers, the server's own
compile for hover and navigation after them), the open documents a file event makes stale
(file_events.py), and the analyses of the project's other files for references (project.py).
What the editor is shown of diagnostics, and of an analysis that failed (E000), ran out of
time (E407) or of memory (E410), is published.py's."""
from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from astral_dsl import __version__, cancel
from astral_dsl.lsp import workers
from astral_dsl.lsp.analysis import Analysis, analyse
from astral_dsl.lsp.file_events import FileEvents
from astral_dsl.lsp.positions import Lines
from astral_dsl.lsp.project import by_real_path, path_uri, real_path, uri_path
from astral_dsl.lsp.published import (converted, failed_analysis, memory_analysis, stopped_analysis,
                                      uncompiled)
from astral_dsl.lsp.protocol import AstralProtocol, NotOpen, RequestFailed, converter

log = logging.getLogger("astral.lsp")

MAX_PROJECT_FILES = 200
TIMEOUT = 20.0            # seconds an analysis or a request may take (`astral lsp --timeout`)


class AstralServer(FileEvents, LanguageServer):
    def __init__(self, debounce: float = 0.3, timeout: float = TIMEOUT):
        super().__init__("astral", __version__, protocol_cls=AstralProtocol,
                         converter_factory=converter)
        self.debounce = debounce
        self.timeout = timeout
        self.latest: Dict[str, Analysis] = {}          # uri -> analysis of its latest text
        self.good: Dict[str, Analysis] = {}            # uri -> latest analysis that parsed
        self.pending: Dict[str, asyncio.Task] = {}     # debounced analyses
        self.inflight: Dict[str, Tuple[Tuple[int, Dict[str, str]], workers.Job]] = {}
        self.project: Dict[str, Tuple[float, Analysis]] = {}   # other files, for references
        self.checker = workers.Checker()                # the worker processes of analyses
        self.analysed = False                           # the first analysis has finished
        self.files = 0        # counts opened, closed, saved and changed-on-disk files (stale())
        self.shown: Dict[str, Tuple[Optional[int], tuple]] = {}   # uri -> published (version, diagnostics)
        self.ending: Optional[int] = None      # the signal that is ending the server (server.py)

    def shutdown(self) -> None:
        """pygls' shutdown, except when a signal ends the server: then its thread that reads
        the input, blocked in a read nothing will answer, is not waited for (pygls joined it,
        and the server hung)."""
        if self.ending is None:
            super().shutdown()
            return
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool:
            self._thread_pool.shutdown(wait=False)

    def document(self, uri: str):
        """The open document `uri` (never a file read from disk for an unknown URI)."""
        if not self.is_open(uri):
            raise NotOpen(message=f"`{uri}` is not an open document")
        return self.workspace.get_text_document(uri)

    def report_server_error(self, error: Exception, source) -> None:
        """A notification the server could not take (invalid params: a didOpen without its
        text; a client that broke the protocol): logged, and told the client as a log message,
        not pygls's "Error in server" popup, which the user can do nothing about."""
        if source is FeatureRequestError:
            return                    # a request: its error response says it
        if isinstance(error, (ValueError, RecursionError)):   # pygls's io loop: not JSON, not
            self.protocol.invalid(None, f"{type(error).__name__}: {error}",  # UTF-8, nested
                                  lsp.ErrorCodes.ParseError)                 # past the parser
            return
        text = f"astral: a notification was not handled: {type(error).__name__}: {error}"
        log.warning(text)
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning,
                                                     message=text))

    def is_open(self, uri: str) -> bool:
        """Whether the client opened `uri` (pygls keys its documents by the unquoted URI: a
        path with a space is `my%20project` in the client's messages, `my project` there)."""
        return unquote(uri) in self.workspace.text_documents

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
        if not self.is_open(uri):
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
            # the worker's deadline counts its work (workers.Checker), not its start-up
            # (bounded apart: workers.START), and the server's compile after it has a deadline
            # of its own (`_analyse`); the job's, their sum, is a backstop: whatever else
            # waits in it (the fork server's start of a worker), the job ends then (E407)
            loop = asyncio.get_running_loop()
            job = workers.Job(loop, "the analysis", self.wait_limit, self._analyse, loop, uri,
                              text, version, texts, stopper, on_stop=stopper.stop)
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
        if not self.is_open(uri):
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

    def _analyse(self, loop: asyncio.AbstractEventLoop, uri: str, text: str, version: int,
                 texts: Dict[str, str], stopper: workers.Stopper) -> Analysis:
        """The checks in a worker process (ended by `stopper`), whose diagnostics (placed in
        the document) are published as soon as they come (`_checked`), then the compile in this
        process that hover and navigation read; both read the other open documents' `texts`
        (by path), the editor's text when the analysis started."""
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
        if status == "memory":
            log.warning("the analysis of %s passed the workers' memory limit", uri)
            return memory_analysis(uri, path, text, version, self.checker.memory)
        if status != "ok":
            log.error("analysis of %s failed: %s", uri, found)
            return failed_analysis(uri, path, text, version, RuntimeError(found))
        try:
            loop.call_soon_threadsafe(self._checked, uri, version, text, found)
        except RuntimeError:                          # the loop is closed: nobody waits
            raise workers.Stopped("the server stopped") from None
        files = self.files
        snapshot = by_real_path(texts)
        # the server's compile has a deadline of its own, as the worker's check had: it stops
        # (cancel.py) at it, or when a newer version stops the job (before, it ran to its end,
        # up to ~25 s of CPU, with nothing waiting for it after a newer version or a request's
        # own limit; a request on the document waited for it)
        end = time.monotonic() + self.timeout
        try:
            with cancel.stop_when(lambda: stopper.stopped or time.monotonic() > end):
                a = analyse(uri, path, text, version, lambda p: snapshot.get(real_path(p)),
                            engineering=False)
        except cancel.Cancelled:
            if stopper.stopped:
                raise workers.Stopped("the analysis was cancelled") from None
            log.warning("the server's compile of %s took longer than %g s", uri, self.timeout)
            a = uncompiled(uri, path, text, version, found, self.timeout)
            a.files = files
            return a
        except Exception as exc:  # noqa: BLE001 - a compiler bug must not stop the server
            log.exception("analysis of %s failed", uri)
            return failed_analysis(uri, path, text, version, exc)
        a.diagnostics = found
        for m in a.modules.values():
            if m.path is not None and not m.is_entry and not m.is_stdlib:
                key = real_path(m.path)
                a.inputs[key] = (snapshot[key], True) if key in snapshot else \
                    (m.source.text if m.source is not None else None, False)
        a.files = files
        return a

    async def current(self, uri: str) -> Optional[Analysis]:
        """An analysis of exactly the text the editor has now (waiting for it if needed; an
        edit meanwhile restarts the wait on the newer text), waited for at most `wait_limit`
        seconds: RequestFailed after them (a request waited for good on an analysis whose
        worker never started, and the editor's outline or hover with it)."""
        self.document(uri)
        limit = self.wait_limit
        try:
            return await asyncio.wait_for(self._current(uri), limit)
        except asyncio.TimeoutError:
            raise RequestFailed(message=f"the analysis of {Path(unquote(uri)).name} did not "
                                        f"finish within {limit:g} s") from None

    @property
    def wait_limit(self) -> float:
        """Seconds a request waits for an analysis, and an analysis lasts at most: the worker's
        start, its deadline, and the deadline of the server's compile after it."""
        return workers.START + 2 * self.timeout

    async def _current(self, uri: str) -> Optional[Analysis]:
        for _ in range(100):
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            result = await self.refresh(uri)
            if result is not None or not self.is_open(uri):
                return result
        return None

    # -- diagnostics -------------------------------------------------------------------------------
    def publish(self, a: Analysis) -> None:
        """Publish the analysis's diagnostics, unless the worker's were published for this
        version already (`_checked`: they are the same)."""
        if self.shown.get(a.uri) == (a.version, a.diagnostics):
            return
        self.shown[a.uri] = (a.version, a.diagnostics)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=a.uri, diagnostics=converted(self, a.diagnostics, a.text, a.uri), version=a.version))

    def _checked(self, uri: str, version: int, text: str, found) -> None:
        """The worker's diagnostics of `version`, published at once (the server's own compile,
        for hover and navigation, runs after them), if the editor still has that text."""
        if not self.is_open(uri):
            return
        doc = self.workspace.get_text_document(uri)
        if (doc.version or 0) != version or doc.source != text:
            return
        self.shown[uri] = (version, found)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, diagnostics=converted(self, found, text, uri), version=version))

    # -- other files, for references ---------------------------------------------------------------
    def project_analyses(self, a: Analysis) -> List[Analysis]:
        from astral_dsl.lsp.project import analyses

        return analyses(self, a, MAX_PROJECT_FILES)

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
