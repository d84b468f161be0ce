"""Every compile the language server runs in its own process ends within its bound, and every
analysis ends: the server's compile after the worker's check (hover and navigation read it)
stops at its own deadline and when a newer version stops its job, the project scan for
references stops with its request, and an analysis whose worker never answers ends at the
backstop (workers.START + 2 x the deadline), E407, instead of keeping a didOpen waiting for
good. Before, each of these compiles ran to its end in a thread nobody waited for (up to the
evaluation budget, ~25 s of CPU, per compile; 200 compiles in a project scan).

Deterministic: the worker is a stand-in that answers at once or never, and a deadline of a
microsecond is past before the compile's first question (evaluate.py asks at its first step).
The times below are guards against a hang, not speed assertions."""
from __future__ import annotations

import asyncio
import gc
import threading

import pytest
from lsprotocol import types as lsp
from pygls.workspace import Workspace

from astral_dsl import cancel
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.lsp import documents, workers
from astral_dsl.lsp.analysis import analyse
from astral_dsl.lsp.protocol import RequestFailed
from astral_dsl.lsp.server import build
from test_lsp_stall import _StalledChecker      # a worker that never answers (until released)

TEXT = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"
# a design whose evaluation takes ~360,000 steps (4 x 90,000 list elements, each a few
# evaluations): about half a second of CPU here, far more than the questions' spacing
HEAVY = "".join(f"let x{k} = sum([i * 1 W + 2 W for i in 0..30000])\n" for k in range(4)) + TEXT
WORKER_SAYS = Diagnostic("W999", Severity.WARNING, "from the worker", Span.at("m", 1, 1))


class _Answering:
    """The worker's check, answered at once with one diagnostic."""

    def check(self, stopper, request, timeout=None):
        return "ok", (WORKER_SAYS,)

    def close(self):
        pass


def _watched(real, ended):
    """`real`, each call's end told in `ended`: "finished", or the exception's type."""
    def call(*args, **kwargs):
        try:
            out = real(*args, **kwargs)
        except BaseException as exc:
            ended.append(type(exc).__name__)
            raise
        ended.append("finished")
        return out
    return call


def _server(tmp_path, checker, timeout, text=TEXT):
    server = build(debounce=0, timeout=timeout)
    server.checker = checker
    server.protocol._workspace = Workspace(None)
    uri = (tmp_path / "main.astral").as_uri()
    server.workspace.put_text_document(lsp.TextDocumentItem(uri=uri, language_id="astral",
                                                            version=1, text=text))
    published = []
    server.text_document_publish_diagnostics = published.append
    return server, uri, published


def test_a_compile_asked_to_stop_ends_at_the_evaluators_next_question():
    """The compile stops where the evaluator asks (every cancel.POLL_STEPS steps), with its
    own thread's exception: the collector's pause (gcpause.py) is undone on the way out, and
    the thread compiles as before once nothing asks it to stop."""
    asked = []

    def third_question():
        asked.append(1)
        return len(asked) >= 3

    enabled = gc.isenabled()
    with pytest.raises(cancel.Cancelled):
        with cancel.stop_when(third_question):
            analyse("file:///m.astral", None, HEAVY, 1, engineering=False)
    # questions at steps 1, 4,097 and 8,193: stopped at the third, of the ~90 it would ask
    assert len(asked) == 3
    assert gc.isenabled() == enabled
    a = analyse("file:///m.astral", None, HEAVY, 1, engineering=False)
    assert a.design is not None and a.diagnostics == ()


def test_the_servers_compile_stops_at_its_deadline_and_keeps_the_workers_diagnostics(tmp_path):
    server, uri, published = _server(tmp_path, _Answering(), timeout=1e-6)

    async def scenario():
        return await asyncio.wait_for(server.refresh(uri), 30)     # 30: a guard

    a = asyncio.run(scenario())
    # the worker's diagnostics are complete: kept, with E407 (a warning) saying that hover and
    # navigation wait for the next edit; the compile itself did not run to its end
    assert [(d.code, d.severity) for d in a.diagnostics] == [
        ("W999", Severity.WARNING), ("E407", Severity.WARNING)]
    assert "compile for hover and navigation took longer than 1e-06 s" in \
        a.diagnostics[1].message
    assert not a.parsed and a.design is None
    assert [[d.code for d in p.diagnostics] for p in published] == [["W999"],
                                                                     ["W999", "E407"]]


def test_a_newer_version_stops_the_servers_compile_of_the_older_one(tmp_path, monkeypatch):
    """The job of version 1 is cancelled while its compile runs (version 2 arrived): the
    compile ends at its first question, not at its end."""
    server, uri, _ = _server(tmp_path, _Answering(), timeout=20, text=HEAVY)
    compiling, cancelled, ended = threading.Event(), threading.Event(), []
    compile_ = _watched(documents.analyse, ended)

    def watched(*args, **kwargs):
        compiling.set()
        assert cancelled.wait(30)
        return compile_(*args, **kwargs)

    monkeypatch.setattr(documents, "analyse", watched)

    async def scenario():
        refresh = asyncio.ensure_future(server.refresh(uri))
        while not compiling.is_set():
            await asyncio.sleep(0.01)
        server.inflight[uri][1].cancel()       # what a newer version's refresh does
        cancelled.set()
        assert await asyncio.wait_for(refresh, 30) is None      # superseded

    asyncio.run(scenario())
    for thread in threading.enumerate():
        if thread.name == "astral-the analysis":
            thread.join(30)
    assert ended == ["Cancelled"]


def test_the_project_scan_stops_with_its_request(tmp_path):
    """references compiles the project's other files in the server: a request past its
    deadline stops the scan's compile too (it went on to its end, and the next request's scan
    compiled the same file again)."""
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "other.astral").write_text(HEAVY)
    server, uri, _ = _server(tmp_path, _Answering(), timeout=1e-6)
    a = analyse(uri, tmp_path / "main.astral", TEXT, 1, engineering=False)

    async def scenario():
        with pytest.raises(RequestFailed, match="references took longer than 1e-06 s"):
            await asyncio.wait_for(server.job("references", server.project_analyses, a), 30)

    asyncio.run(scenario())
    for thread in threading.enumerate():
        if thread.name == "astral-references":
            thread.join(30)
            assert not thread.is_alive()
    assert server.project == {}                 # other.astral's compile did not finish


def test_an_analysis_whose_worker_never_answers_ends_at_the_backstop(tmp_path, monkeypatch):
    """didOpen waits for its analysis (refresh): with a worker that never answers (a fork
    server that never starts one) it waited for good; the analysis ends at workers.START +
    2 x the deadline with E407, published."""
    monkeypatch.setattr(workers, "START", 0.2)
    checker = _StalledChecker()
    server, uri, published = _server(tmp_path, checker, timeout=0.1)

    async def scenario():
        return await asyncio.wait_for(server.refresh(uri), 30)     # 30: a guard

    try:
        a = asyncio.run(scenario())
    finally:
        checker.close()
    assert [d.code for d in a.diagnostics] == ["E407"]
    assert "the analysis took longer than 0.4 s" in a.diagnostics[0].message
    assert [[d.code for d in p.diagnostics] for p in published] == [["E407"]]


def test_a_hovers_margins_stop_with_their_request(tmp_path, monkeypatch):
    """A hover on a param compiles the design several times (its feasible range, in the
    server): a hover past its deadline stops them (they went on to their end)."""
    from astral_dsl.explore import margins
    from astral_dsl.lsp import features

    path = tmp_path / "main.astral"
    text = "param n = 8\nlet w = n * 700 W\ncheck w <= 10 kW else error \"too much\"\n"
    path.write_text(text)
    server, uri, _ = _server(tmp_path, _Answering(), timeout=1e-6, text=text)
    a = analyse(uri, path, text, 1, engineering=False)
    ended = []
    monkeypatch.setattr(margins, "analyse", _watched(margins.analyse, ended))

    async def scenario():
        with pytest.raises(RequestFailed, match="hover took longer than 1e-06 s"):
            await asyncio.wait_for(server.job("hover", features.hover, a, "utf-16",
                                              lsp.Position(line=0, character=6)), 30)

    asyncio.run(scenario())
    for thread in threading.enumerate():
        if thread.name == "astral-hover":
            thread.join(30)
    assert ended == ["Cancelled"]
