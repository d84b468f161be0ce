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


def test_a_problem_in_a_module_imported_indirectly_is_shown_on_the_import_that_leads_to_it(
        tmp_path):
    """main imports a, then b; b imports deep, where the error is: it is shown on `import b`,
    the import that brings it in (before: on the entry's first import, `import a`, which has
    nothing to do with it)."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.published import placed

    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "a.astral").write_text("gpu A { power = 700 W }\n")
    (tmp_path / "b.astral").write_text("import deep { D }\ngpu B { power = 700 W }\n")
    (tmp_path / "deep.astral").write_text("gpu D { power = 700 W }\nparam bad = 3 kW + 2 m\n")
    main = tmp_path / "main.astral"
    main.write_text("import a { A }\nimport b { B }\nhost H { gpus = 8 x B }\n"
                    "site S { hosts = 1 x H }\n")
    a = analyse(main.as_uri(), main, main.read_text(), 1)
    errors = [d for d in placed(a) if d.is_error]
    assert [(d.code, d.span.start.line, d.span.start.column, d.span.end.column)
            for d in errors] == [("E301", 2, 1, 15)]          # `import b { B }`, line 2
    assert errors[0].message.startswith(f"{tmp_path / 'deep.astral'}:2:13: ")


class _Client:
    """What `converted` reads of the server: its Lines, the editor's texts (none open) and the
    client's capabilities (relatedInformation shown, or not)."""

    def __init__(self, related: bool):
        self.client_capabilities = lsp.ClientCapabilities(text_document=lsp.TextDocumentClientCapabilities(
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                related_information=related)))

    def lines(self, text):
        from astral_dsl.lsp.positions import Lines

        return Lines(text)

    def overlay(self, path):
        return None


def test_a_diagnostic_a_stdlib_template_causes_has_the_stdlibs_line_as_related_information(
        tmp_path):
    """W626 of a bare NVL72 stands on the user's `2 x NVL72`, and the editor gets NVL72's
    declaration in stdlib/hardware.astral as its relatedInformation (before: the diagnostic
    stood in the stdlib, shown on the import line with its position in the message)."""
    from astral_dsl import resources
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.published import converted, placed

    text = "import stdlib.hardware { NVL72 }\nsite S {\n  racks = 2 x NVL72\n}\n"
    main = tmp_path / "main.astral"
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    found = placed(a)
    (d,) = [d for d in converted(_Client(True), found, text) if d.code == "W626"]
    assert (d.range.start.line, d.range.start.character) == (2, text.split("\n")[2].index("NVL72"))
    (info,) = d.related_information
    hardware = resources.stdlib_dir() / "hardware.astral"
    assert info.location.uri == hardware.as_uri() and info.message == "rack `NVL72` is declared here"
    stdlib_lines = hardware.read_text(encoding="utf-8").split("\n")
    assert stdlib_lines[info.location.range.start.line].startswith("rack NVL72(")
    assert "note:" not in d.message
    # a client that does not show relatedInformation reads it in the message
    (d,) = [d for d in converted(_Client(False), found, text) if d.code == "W626"]
    assert d.related_information is None
    line = info.location.range.start.line + 1
    assert d.message.endswith(f"\nnote: rack `NVL72` is declared here ({hardware}:{line}:1)")


def test_a_problem_in_an_imported_file_has_its_place_there_as_related_information(tmp_path):
    """Shown on the import that brings it in, as before, and now with where it stands in the
    imported file as its relatedInformation."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.published import converted, placed

    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "deep.astral").write_text("gpu D { power = 700 W }\nparam bad = 3 kW + 2 m\n")
    main = tmp_path / "main.astral"
    text = "import deep { D }\nhost H { gpus = 8 x D }\nsite S { hosts = 1 x H }\n"
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    (d,) = [d for d in converted(_Client(True), placed(a), text) if d.code == "E301"]
    assert d.range.start.line == 0
    (info,) = d.related_information
    assert info.location.uri == (tmp_path / "deep.astral").as_uri()
    assert (info.location.range.start.line, info.location.range.start.character) == (1, 12)
    assert info.message == "where it stands, in the imported file"
