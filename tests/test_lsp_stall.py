"""A request that waits for an analysis always gets an answer: a worker process that never
starts (never says "ready") is stopped at workers.START, and a request waits for the analysis
at most `wait_limit` seconds (then RequestFailed); the outline never waits for it (it parses
the text when no analysis of that text is done). Seen once in CI on a loaded machine:
`textDocument/documentSymbol` after a didOpen and a didChange was not answered in 90 s, and
the wait for a worker's start had no bound. In process: the worker's process and pipe, and the
checker, are stand-ins."""
from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

import pytest
from lsprotocol import types as lsp
from pygls.workspace import Workspace

from astral_dsl.lsp import features, workers
from astral_dsl.lsp.protocol import RequestFailed
from astral_dsl.lsp.server import build

TEXT = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\n"


class _Process:
    """A worker process that never sends "ready" (stalled in its start)."""

    def __init__(self):
        self.killed = False

    def is_alive(self):
        return not self.killed

    def kill(self):
        self.killed = True


def _stalled_worker():
    worker = object.__new__(workers._Worker)
    worker.conn, child = multiprocessing.Pipe()
    worker.process, worker.ready = _Process(), False
    _PIPES.append(child)                     # the worker's end: open, never written
    return worker


_PIPES: list = []


def test_a_worker_that_never_starts_is_stopped_at_its_start_limit(monkeypatch):
    monkeypatch.setattr(workers, "START", 0.2, raising=False)
    worker, raised = _stalled_worker(), []

    def call():
        try:
            worker.call(("uri", None, TEXT, {}), 20)
        except Exception as exc:  # noqa: BLE001 - checked below
            raised.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(5)                      # 0.2 s, in slices of 0.1 s (it waited for good)
    assert not thread.is_alive()
    assert [str(e) for e in raised] == [
        "the start of the analysis worker took longer than 0.2 s and was stopped"]
    assert worker.process.killed and not worker.alive


def test_a_worker_ended_from_another_thread_ends_the_wait_but_keeps_its_pipe():
    """`kill` (a newer version's stopper, on the event loop's thread) ends the process; the
    pipe is closed by the thread that uses it, never under it (its next read or write went to
    whatever file took the pipe's number)."""
    worker = _stalled_worker()
    threading.Timer(0.2, worker.kill).start()
    with pytest.raises(workers.Stopped):
        worker.call(("uri", None, TEXT, {}), None)
    assert worker.process.killed and not worker.conn.closed
    worker.close()
    assert worker.conn.closed


class _StalledChecker:
    """Analyses whose worker never answers (until the test lets them go)."""

    def __init__(self):
        self.release = threading.Event()

    def check(self, stopper, request, timeout=None):
        assert self.release.wait(60)
        raise workers.Stopped("released")

    def close(self):
        self.release.set()


def _stalled_server(tmp_path, timeout):
    """A server whose analyses never answer, with main.astral (TEXT) open; its outline request."""
    server = build(debounce=0, timeout=timeout)
    server.checker = _StalledChecker()
    server.protocol._workspace = Workspace(None)
    uri = (tmp_path / "main.astral").as_uri()
    server.workspace.put_text_document(lsp.TextDocumentItem(uri=uri, language_id="astral",
                                                            version=1, text=TEXT))
    symbols = server.protocol.fm.features[lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL]
    return server, uri, symbols


def test_a_request_waiting_for_an_analysis_that_never_ends_is_answered(monkeypatch, tmp_path):
    monkeypatch.setattr(workers, "START", 0.2, raising=False)
    # wait_limit: 0.2 + 2 x 0.1 = 0.4 s
    server, uri, symbols = _stalled_server(tmp_path, timeout=0.1)
    # the parser's first use in this process (its imports and tables: 0.14 s here, more under
    # load) is made before the race: the outline's own deadline below is 0.1 s
    features.symbols(None, TEXT, "utf-16")

    async def scenario():
        began = time.monotonic()
        with pytest.raises(RequestFailed, match=r"the analysis of main.astral did not finish "
                                                r"within 0.4 s"):
            await asyncio.wait_for(server.current(uri), 10)     # 10: a guard against the hang
        # the outline needs only the syntax: parsed afresh, answered
        outline = await asyncio.wait_for(symbols(lsp.DocumentSymbolParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri))), 20)
        assert [(s.name, s.range.start.line) for s in outline] == [("G", 0), ("H", 1)]
        assert time.monotonic() - began < 15
        server.checker.close()

    try:
        asyncio.run(scenario())
    finally:
        server.checker.close()


def test_a_dead_idle_worker_is_dropped_with_its_pipe():
    """An idle worker whose process died (killed from outside) was dropped from the pool with
    its end of the pipe open: a file descriptor lost per such worker."""
    class Fake:
        def __init__(self, alive):
            self.alive, self.closed = alive, False

        def call(self, request, timeout):
            return "ok", request

        def close(self):
            self.closed = True

    checker = workers.Checker.__new__(workers.Checker)
    checker._lock, checker.warm = threading.Lock(), lambda: None
    dead, live = Fake(False), Fake(True)
    checker._idle = [dead, live]
    assert checker.check(workers.Stopper(), "a") == ("ok", "a")
    assert dead.closed and not live.closed and checker._idle == [live]


def test_the_outline_does_not_wait_for_a_stalled_analysis(tmp_path):
    """The outline needs only the syntax: with the document's analysis stalled (a worker that
    never answers, wait_limit 70 s), it is answered from the text at once (it waited for the
    analysis until wait_limit, showing nothing)."""
    server, uri, symbols = _stalled_server(tmp_path, timeout=20.0)

    async def scenario():
        stalled = asyncio.ensure_future(server.refresh(uri))      # the analysis, never ending
        await asyncio.sleep(0)
        outline = await asyncio.wait_for(symbols(lsp.DocumentSymbolParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri))), 10)    # 10: far below 70
        assert [(s.name, s.range.start.line) for s in outline] == [("G", 0), ("H", 1)]
        assert not stalled.done()
        server.checker.close()
        await asyncio.wait_for(stalled, 30)

    try:
        asyncio.run(scenario())
    finally:
        server.checker.close()


def test_an_analysis_never_waits_on_a_stalled_start_itself(monkeypatch):
    """With no idle worker, an analysis waits for the one `warm` starts, at most START seconds
    (then TimedOut), and less when its job is stopped (Stopped): it never starts one in its own
    thread, where a fork server that never answers had kept it for good. At most IDLE starts are
    in flight however many analyses wait."""
    monkeypatch.setattr(workers, "START", 0.3, raising=False)
    release, started = threading.Event(), []

    class Stalled:
        alive = True

        def __init__(self, ctx, memory):
            started.append(self)
            release.wait(30)                 # the fork server's answer, until the test ends

        def close(self):
            self.alive = False

    monkeypatch.setattr(workers, "_Worker", Stalled)
    checker = workers.Checker.__new__(workers.Checker)
    checker._ctx, checker._memory = None, None
    checker._lock = threading.Lock()
    checker._ready = threading.Condition(checker._lock)
    checker._idle, checker._starting = [], 0
    try:
        began = time.monotonic()
        with pytest.raises(workers.TimedOut, match="the start of the analysis worker"):
            checker.check(workers.Stopper(), "a")
        assert time.monotonic() - began < 5
        stopper = workers.Stopper()
        threading.Timer(0.05, stopper.stop).start()
        with pytest.raises(workers.Stopped):
            checker.check(stopper, "b")
        assert len(started) <= workers.IDLE
    finally:
        release.set()
