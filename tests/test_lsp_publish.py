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
    from astral_dsl.lsp.placed import placed

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
    from astral_dsl.lsp.placed import placed
    from astral_dsl.lsp.published import converted

    text = "import stdlib.hardware { NVL72 }\nsite S {\n  racks = 2 x NVL72\n}\n"
    main = tmp_path / "main.astral"
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    found = placed(a)
    (d,) = [d for d in converted(_Client(True), found, text, main.as_uri()) if d.code == "W626"]
    assert (d.range.start.line, d.range.start.character) == (2, text.split("\n")[2].index("NVL72"))
    (info,) = d.related_information
    hardware = resources.stdlib_dir() / "hardware.astral"
    assert info.location.uri == hardware.as_uri() and info.message == "rack `NVL72` is declared here"
    stdlib_lines = hardware.read_text(encoding="utf-8").split("\n")
    assert stdlib_lines[info.location.range.start.line].startswith("rack NVL72(")
    assert "note:" not in d.message
    # a client that does not show relatedInformation reads it in the message
    (d,) = [d for d in converted(_Client(False), found, text, main.as_uri()) if d.code == "W626"]
    assert d.related_information is None
    line = info.location.range.start.line + 1
    assert d.message.endswith(f"\nnote: rack `NVL72` is declared here ({hardware}:{line}:1)")


def test_a_problem_in_an_imported_file_has_its_place_there_as_related_information(tmp_path):
    """Shown on the import that brings it in, as before, and now with where it stands in the
    imported file as its relatedInformation."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.placed import placed
    from astral_dsl.lsp.published import converted

    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "deep.astral").write_text("gpu D { power = 700 W }\nparam bad = 3 kW + 2 m\n")
    main = tmp_path / "main.astral"
    text = "import deep { D }\nhost H { gpus = 8 x D }\nsite S { hosts = 1 x H }\n"
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    (d,) = [d for d in converted(_Client(True), placed(a), text, main.as_uri()) if d.code == "E301"]
    assert d.range.start.line == 0
    (info,) = d.related_information
    assert info.location.uri == (tmp_path / "deep.astral").as_uri()
    assert (info.location.range.start.line, info.location.range.start.character) == (1, 12)
    assert info.message == "where it stands, in the imported file"


SCENARIO = """gpu G { power = 700 W }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 4 x H }
row Row { let s = "\U0001f525\U0001f525\U0001f525", racks = 4 x R, feeder main { current = ac, voltage = 400 V, phases = 3, capacity = 500 kW, serves = racks } }
site S { rows = 2 x Row }
scenario outage {
  required = true
  fail S.rows[0].main
}
"""


def test_a_related_span_in_the_document_itself_is_placed_in_its_own_text_untitled_too():
    """E680's related span (the feeder it breaks, in the document being edited) is converted
    with the document's own text: a document without a file (an editor's untitled buffer)
    had its related range in code points (3:47), not in the UTF-16 units of its three emoji
    before it (3:50) as its own range is."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.placed import placed
    from astral_dsl.lsp.published import converted

    uri = "untitled:Untitled-1"
    a = analyse(uri, None, SCENARIO, 1)
    (d,) = [d for d in converted(_Client(True), placed(a), SCENARIO, uri) if d.code == "E680"]
    (info,) = d.related_information
    line = SCENARIO.split("\n")[3]
    start = len(line[:line.index("main {")].encode("utf-16-le")) // 2
    assert info.location.uri == uri
    assert (info.location.range.start.line, info.location.range.start.character) == (3, start)
    assert info.location.range.end.character == start + 4


def test_a_related_span_in_a_file_that_became_a_fifo_is_not_waited_on(tmp_path):
    """The related span's file is read as the compiler reads a source: a file replaced by a
    FIFO (no writer) since the analysis is refused at once, its columns then read as code
    points; path.read_text waited for a writer, the server's thread with it."""
    import os
    import threading

    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.placed import placed
    from astral_dsl.lsp.published import converted

    (tmp_path / "astral.toml").write_text("")
    deep = tmp_path / "deep.astral"
    deep.write_text("gpu D { power = 700 W }\nparam bad = 3 kW + 2 m\n")
    main = tmp_path / "main.astral"
    text = "import deep { D }\nhost H { gpus = 8 x D }\nsite S { hosts = 1 x H }\n"
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    found = placed(a)
    deep.unlink()
    os.mkfifo(deep)
    out = []
    worker = threading.Thread(target=lambda: out.append(converted(_Client(True), found, text,
                                                                  main.as_uri())), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():           # let the reader go before failing
        fd = os.open(deep, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    assert out, "converted waited on the FIFO"
    (d,) = [d for d in out[0] if d.code == "E301"]
    (info,) = d.related_information
    assert (info.location.range.start.line, info.location.range.start.character) == (1, 12)


def test_a_related_span_in_a_data_file_is_located_by_its_uri(tmp_path, monkeypatch):
    """W231 stands at an inventory's row, a file of the design that is no module: shown on the
    import line as before, its row is related information located by the file's URI; its
    location's `uri` was the file's name relative to the working directory (`fleet.csv`,
    no URI), labelled "in the imported file". A span whose file has no URI is a note."""
    from astral_dsl.diagnostics import Diagnostic, Related, Severity, Span
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.positions import Lines
    from astral_dsl.lsp.placed import placed
    from astral_dsl.lsp.published import converted, to_lsp

    monkeypatch.chdir(tmp_path)
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "fleet.csv").write_text("name,serial\nh0,A1\nh1,B2\nh2,C3\n")
    main = tmp_path / "d.astral"
    text = ('host H { power = 1 kW, name = "h{host}" }\nrack R { hosts = 2 x H }\n'
            'site S { racks = 1 x R, utilization = 75 % }\n'
            'inventory Fleet { file = "fleet.csv" }\n')
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    (d,) = [d for d in converted(_Client(True), placed(a), text, main.as_uri())
            if d.code == "W231"]
    (info,) = d.related_information
    assert info.location.uri == (tmp_path / "fleet.csv").as_uri()
    assert (info.location.range.start.line, info.location.range.start.character) == (3, 0)
    assert info.message == "where it stands, in that file"
    odd = Diagnostic("W231", Severity.WARNING, "m", Span.at("d.astral", 1, 1),
                     related=(Related(Span.at("gone.csv", 2, 1), "there"),))
    shown = to_lsp(odd, Lines(text), None, True)
    assert shown.related_information is None and shown.message == "m\nnote: there (gone.csv:2:1)"


def test_a_related_span_in_the_stdlib_is_the_installed_files_uri_wherever_it_is(
        tmp_path, monkeypatch):
    """Outputs name a stdlib file `stdlib/hardware.astral` wherever the package is installed
    (tests/test_stdlib_names.py); the editor still gets the installed file's URI, for the
    related information and for go to definition, with the stdlib elsewhere than the checkout
    and the server run outside both; a stdlib file that is no module (a climate file) is
    found by its name too."""
    import shutil

    from astral_dsl import resources
    from astral_dsl.lsp import features
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.placed import _uri, placed
    from astral_dsl.lsp.published import converted

    stdlib = tmp_path / "elsewhere" / "stdlib"
    shutil.copytree(resources.stdlib_dir(), stdlib)
    monkeypatch.setattr(resources, "stdlib_dir", lambda: stdlib)
    monkeypatch.chdir(tmp_path)
    text = "import stdlib.hardware { NVL72 }\nsite S {\n  racks = 2 x NVL72\n}\n"
    main = tmp_path / "project" / "main.astral"
    main.parent.mkdir()
    main.write_text(text)
    a = analyse(main.as_uri(), main, text, 1)
    assert "stdlib/hardware.astral" in a.modules
    (d,) = [d for d in converted(_Client(True), placed(a), text, main.as_uri()) if d.code == "W626"]
    (info,) = d.related_information
    hardware = stdlib / "hardware.astral"
    assert info.location.uri == hardware.as_uri()
    lines = hardware.read_text(encoding="utf-8").split("\n")
    assert lines[info.location.range.start.line].startswith("rack NVL72(")
    at = features.declaration(a, "utf-16", lsp.Position(line=2, character=text.split("\n")[2]
                                                        .index("NVL72") + 1))
    location = documents.AstralServer.location(_Client(True), a, at.span)
    assert location.uri == hardware.as_uri()
    assert lines[location.range.start.line].startswith("rack NVL72(")
    climate = next((stdlib / "climate").glob("*.CSV"))
    assert _uri(a, f"stdlib/climate/{climate.name}") == climate.as_uri()


def test_an_editors_hints_set_a_value_with_the_commands_option(tmp_path):
    """The language server compiled through the Python API, so W216's hint told an editor's
    user to call `with_params(n=...)`; they set it as the command does, `--set n=...`."""
    from astral_dsl.lsp.analysis import analyse

    (tmp_path / "astral.toml").write_text("")
    main = tmp_path / "main.astral"
    main.write_text('param n = 8 assumed "until the floor plan"\n'
                    "gpu G { power = 700 W, memory = 80 GB }\n"
                    "host H { gpus = 8 x G, power = 10.2 kW }\n"
                    "rack R { hosts = 4 x H }\nsite S { rows = n x R }\n")
    for path in (main, None):                 # a saved file, and an unsaved document
        a = analyse(main.as_uri(), path, main.read_text(), 1)
        (d,) = [d for d in a.diagnostics if d.code == "W216"]
        assert "`--set n=...`" in d.hint and "with_params" not in d.hint
