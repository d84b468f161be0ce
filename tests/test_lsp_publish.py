"""When the language server publishes an analysis's diagnostics: as soon as the worker process
answers, not after the server's own compile (for hover and navigation), which runs after them
(on a 1 MB design each takes seconds: an edit's diagnostics came after both, 11-19 s). In
process: the worker (the checker) and the server's compile are stand-ins, the compile held until
the test has seen the publication."""
from __future__ import annotations

import asyncio
import threading

from lsprotocol import types as lsp
from pygls.workspace import Workspace

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.lsp import documents
from astral_dsl.lsp.documents import AstralServer

TEXT = "gpu G { power = 700 W }\n"


class Checker:
    """The worker processes: they answer at once with one warning."""

    def __init__(self, found):
        self.found = found

    def check(self, stopper, request, timeout=None):
        return "ok", self.found

    def close(self):
        pass


def test_diagnostics_are_published_before_the_servers_compile_ends(monkeypatch, tmp_path):
    path = tmp_path / "main.astral"
    uri = path.as_uri()
    found = (Diagnostic("W626", Severity.WARNING, "no feeder", Span.at(str(path), 1, 1)),)
    compiling, release = threading.Event(), threading.Event()
    real = documents.analyse

    def held_compile(*args, **kwargs):
        compiling.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(documents, "analyse", held_compile)
    server = AstralServer(debounce=0)
    server.checker = Checker(found)
    server.protocol._workspace = Workspace(None)
    server.workspace.put_text_document(lsp.TextDocumentItem(uri=uri, language_id="astral",
                                                            version=1, text=TEXT))
    published = []
    server.text_document_publish_diagnostics = published.append

    async def scenario():
        refresh = asyncio.ensure_future(server.refresh(uri))
        for _ in range(3000):                       # a guard against a hang: 30 s
            if published:
                break
            await asyncio.sleep(0.01)
        # the worker's diagnostics are out while the server's compile still runs
        assert compiling.is_set() and not release.is_set() and not refresh.done()
        assert [(p.uri, p.version, [d.code for d in p.diagnostics]) for p in published] == \
            [(uri, 1, ["W626"])]
        assert published[0].diagnostics[0].range.start == lsp.Position(line=0, character=0)
        release.set()
        a = await refresh
        assert a is not None and a.parsed and a.diagnostics == found
        assert len(published) == 1                  # not published a second time
        assert server.latest[uri] is a              # hover and navigation read it

    asyncio.run(scenario())
