"""The language server, driven over stdio by a real LSP client (pygls's LanguageClient) in a
subprocess (`python -m astral_dsl.cli lsp`), as an editor runs it.

Checked: a file with an error gets the diagnostic with the right range (in UTF-16 columns, after
a character outside the BMP), and fixing it clears it; hover on a quantity gives its value, unit,
conversions and type, and on a stdlib item the source of its numbers; go to definition into
another file of the project and into the stdlib; references across files; completion of a unit
and of a stdlib GPU name (with the import it needs); engineering diagnostics; document symbols;
formatting."""
from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from astral_dsl import resources

REPO = Path(__file__).resolve().parents[1]


def errors(diagnostics) -> List:
    """The errors among published diagnostics (a small design also gets warnings for the data
    it does not declare: no feeder, no cooling, ...)."""
    return [d for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Error]


def _env() -> Dict[str, str]:
    """The server runs this checkout, not whatever copy is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    return env

TIMEOUT = 60

MAIN = textwrap.dedent("""\
    import stdlib.hardware { H800 }
    import lib.parts { Accel }

    param limit = 45 kW

    gpu Local { note = "🚀 fast", power = 45 GB }
    host Node { gpus = 8 x Accel }
    host Big { gpus = 8 x H800 }
    rack R {
      hosts = 2 x Node
      check power <= limit
    }
    site S { racks = 1 x R }
    """)

PARTS = textwrap.dedent("""\
    // parts shared by the designs of this project
    gpu Accel {
      power = 700 W
      memory = 80 GB
    }
    """)


class Session:
    """One language server and a client talking to it."""

    def __init__(self, root: Path, debounce: float = 0.05,
                 capabilities: Optional[lsp.ClientCapabilities] = None):
        self.root = root
        self.debounce = debounce
        self.capabilities = capabilities or lsp.ClientCapabilities()
        self.client = LanguageClient("astral-tests", "0")
        self.published: Dict[str, List[Tuple[Optional[int], List[lsp.Diagnostic]]]] = {}
        self.changed = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams):
            self.published.setdefault(params.uri, []).append((params.version,
                                                              list(params.diagnostics)))
            self.changed.set()

        self.versions: Dict[str, int] = {}

    async def __aenter__(self) -> "Session":
        await self.client.start_io(sys.executable, "-m", "astral_dsl.cli", "lsp",
                                   "--debounce", str(self.debounce), cwd=str(self.root),
                                   env=_env())
        await asyncio.wait_for(self.client.initialize_async(lsp.InitializeParams(
            capabilities=self.capabilities, root_uri=self.root.as_uri(),
            process_id=None)), TIMEOUT)
        self.client.initialized(lsp.InitializedParams())
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
            self.client.exit(None)
        finally:
            await self.client.stop()

    def open(self, path: Path, text: Optional[str] = None) -> str:
        uri = path.as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
            uri=uri, language_id="astral", version=1,
            text=path.read_text(encoding="utf-8") if text is None else text)))
        return uri

    def close_all(self) -> None:
        """didClose for every document this client opened."""
        for uri in list(self.versions):
            self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(
                lsp.TextDocumentIdentifier(uri=uri)))
        self.versions.clear()

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri,
                                                              version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))

    async def diagnostics(self, uri: str, ok: Callable[[List[lsp.Diagnostic]], bool]):
        """Wait for a publication for `uri` that satisfies `ok`."""
        async def wait():
            while True:
                for _, diags in reversed(self.published.get(uri, [])):
                    if ok(diags):
                        return diags
                    break
                self.changed.clear()
                await self.changed.wait()
        return await asyncio.wait_for(wait(), TIMEOUT)

    async def hover(self, uri: str, line: int, character: int):
        return await asyncio.wait_for(self.client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character))), TIMEOUT)

    async def definition(self, uri: str, line: int, character: int):
        return await asyncio.wait_for(self.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                 position=lsp.Position(line=line, character=character))), TIMEOUT)

    async def complete(self, uri: str, line: int, character: int) -> List[lsp.CompletionItem]:
        result = await asyncio.wait_for(self.client.text_document_completion_async(
            lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                 position=lsp.Position(line=line, character=character))), TIMEOUT)
        return result.items if isinstance(result, lsp.CompletionList) else list(result or [])


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One language server (and client) for the tests below that need no fresh one: an editor's
    session, where each test's project is a folder of its own (the server finds a document's
    project from its astral.toml, not from the root it was started in) and closes what it
    opened at its end. Each server takes ~0.8 s of CPU to start (importing lsprotocol); the
    start-up itself is tested by tests/test_progress.py and test_lsp_cancel.py, the debounce by
    the test with a server of its own below."""
    loop = asyncio.new_event_loop()
    session = Session(tmp_path_factory.mktemp("lsp-server"))
    loop.run_until_complete(session.__aenter__())
    yield loop, session
    try:
        loop.run_until_complete(session.__aexit__(None, None, None))
    finally:
        loop.close()


def on(server, scenario) -> None:
    """`await scenario(session)` on the module's server, then close the documents it opened."""
    loop, session = server
    try:
        loop.run_until_complete(scenario(session))
    finally:
        session.close_all()


def test_the_server_is_this_checkout(tmp_path):
    """The server runs from a temporary folder: it must still be this checkout's code (the file
    an import there would load: find_spec, without importing lsprotocol, 0.6 s of CPU)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                          "print(u.find_spec('astral_dsl.lsp.server').origin)"],
                         cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert Path(out.stdout.strip()).resolve() == REPO / "astral_dsl" / "lsp" / "server.py", out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "parts.astral").write_text(PARTS, encoding="utf-8")
    (tmp_path / "main.astral").write_text(MAIN, encoding="utf-8")
    return tmp_path


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def position_of(text: str, needle: str, nth: int = 0) -> Tuple[int, int]:
    """LSP position (line, UTF-16 column) of the nth occurrence of `needle`."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at)
    start = text.rfind("\n", 0, at) + 1
    return line, utf16(text[start:at])


def test_diagnostic_range_then_fixed(server, project):
    async def scenario(s):
        uri = s.open(project / "main.astral")
        diags = errors(await s.diagnostics(uri, lambda ds: bool(errors(ds))))
        assert [d.code for d in diags] == ["E304"], [d.message for d in diags]
        d = diags[0]
        assert d.severity == lsp.DiagnosticSeverity.Error and d.source == "astral"
        assert "expects a power" in d.message
        # `45 GB` comes after a rocket (two UTF-16 code units, one code point)
        line, col = position_of(MAIN, "45 GB")
        assert (d.range.start.line, d.range.start.character) == (line, col)
        assert (d.range.end.line, d.range.end.character) == (line, col + len("45 GB"))
        assert col == MAIN.split("\n")[line].index("45 GB") + 1
        # fix it: the diagnostic goes
        s.change(uri, MAIN.replace("45 GB", "700 W"))
        await s.diagnostics(uri, lambda ds: errors(ds) == [])
        # break it again in another way, with a change: a syntax error
        broken = MAIN.replace("hosts = 2 x Node", "hosts = 2 x")
        s.change(uri, broken)
        diags = await s.diagnostics(uri, lambda ds: any(d.code == "E103" for d in ds))
        line, _ = position_of(broken, "check power")
        assert diags[0].range.start.line == line
    on(server, scenario)


def test_a_stdlib_templates_diagnostic_is_published_with_related_information(tmp_path):
    """An editor that shows relatedInformation gets W626 of a bare NVL72 on the user's
    `2 x NVL72` with NVL72's declaration in the stdlib as its related location (before: in
    the stdlib, shown on the import line with its position in the message)."""
    text = "import stdlib.hardware { NVL72 }\nsite S {\n  racks = 2 x NVL72\n}\n"
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "main.astral").write_text(text, encoding="utf-8")
    caps = lsp.ClientCapabilities(text_document=lsp.TextDocumentClientCapabilities(
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(related_information=True)))

    async def scenario():
        async with Session(tmp_path, capabilities=caps) as s:
            uri = s.open(tmp_path / "main.astral")
            diags = await s.diagnostics(uri, lambda ds: any(d.code == "W626" for d in ds))
            (d,) = [d for d in diags if d.code == "W626"]
            assert (d.range.start.line, d.range.start.character) == position_of(text, "NVL72\n")
            (info,) = d.related_information
            hardware = resources.stdlib_dir() / "hardware.astral"
            assert info.location.uri == hardware.as_uri()
            assert info.message == "rack `NVL72` is declared here"
            lines = hardware.read_text(encoding="utf-8").split("\n")
            assert lines[info.location.range.start.line].startswith("rack NVL72(")
    run(scenario())


def test_changes_are_debounced(project):
    """A burst of changes is checked once, at its end."""
    async def scenario():
        async with Session(project, debounce=0.5) as s:
            uri = s.open(project / "main.astral")
            await s.diagnostics(uri, lambda ds: bool(ds))
            opened = len(s.published[uri])
            texts = [MAIN.replace("45 GB", f"{700 + i} W") if i % 2 == 0 else MAIN
                     for i in range(5)]                 # the last one is valid
            for text in texts:
                s.change(uri, text)
            assert s.versions[uri] == 6
            await s.diagnostics(uri, lambda ds: errors(ds) == [])
            await asyncio.sleep(0.8)
            after = s.published[uri][opened:]
            assert [(v, errors(ds)) for v, ds in after] == [(6, [])], after
    run(scenario())


def test_engineering_checks_are_reported(server, project):
    text = MAIN.replace("45 GB", "700 W").replace("check power <= limit",
                                                   "check power <= 1 kW else error \"too hot\"")
    async def scenario(s):
        uri = s.open(project / "main.astral", text)
        diags = errors(await s.diagnostics(uri, lambda ds: bool(errors(ds))))
        assert [d.code for d in diags] == ["E500"]
        assert "too hot" in diags[0].message
        line, col = position_of(text, "power <= 1 kW")
        assert (diags[0].range.start.line, diags[0].range.start.character) == (line, col)
    on(server, scenario)


def test_a_stdlib_assumption_the_design_uses_is_shown_on_its_line(server, project):
    """W216 (tests/test_assumed.py): the editor shows it as a warning on the user's line that
    brings the stdlib's part in, the stdlib's line that states it as related information; an `allow`
    turns it into information."""
    text = MAIN.replace("45 GB", "700 W").replace(
        "import stdlib.hardware { H800 }", "import stdlib.hardware { H800, NVLinkSwitchTray }"
    ).replace("hosts = 2 x Node", "hosts = 2 x Node, trays = 2 x NVLinkSwitchTray")

    def assumed(ds):
        return [d for d in ds if d.code == "W216" and "`power`" in d.message]

    async def scenario(s):
        uri = s.open(project / "main.astral", text)
        (d,) = assumed(await s.diagnostics(uri, lambda ds: bool(assumed(ds))))
        assert d.severity == lsp.DiagnosticSeverity.Warning and d.source == "astral"
        assert d.message.split("\n")[0] == "`power` of switch `NVLinkSwitchTray` is assumed: " \
                                          "0.8 kW (no data sheet gives it)"
        # the stdlib's line that states it: a note, for this client that does not show related
        # information (tests/test_lsp_publish.py: related information for one that does)
        (note,) = [x for x in d.message.split("\n") if x.startswith("note: ")]
        assert note.startswith("note: assumed here (") and "stdlib/hardware.astral:" in note
        line, col = position_of(text, "NVLinkSwitchTray", 1)
        assert (d.range.start.line, d.range.start.character) == (line, col)
        accepted = 'allow W216 "the tray\'s data sheet is due"\n' + text
        s.change(uri, accepted)
        ds = await s.diagnostics(uri, lambda ds: bool(assumed(ds)) and all(
            d.severity == lsp.DiagnosticSeverity.Information for d in assumed(ds)))
        assert "accepted by `allow` at line 1" in assumed(ds)[0].message
    on(server, scenario)


def test_hover_gives_value_unit_and_conversions(server, project):
    async def scenario(s):
        uri = s.open(project / "main.astral")
        await s.diagnostics(uri, lambda ds: True)
        line, col = position_of(MAIN, "45 kW")
        h = await s.hover(uri, line, col + 1)
        text = h.contents.value
        assert "`45 kW`" in text and "power" in text
        assert "BTU/h" in text and "153,500 BTU/h" in text
        assert (h.range.start.line, h.range.start.character) == (line, col)
        assert h.range.end.character == col + len("45 kW")
        # a name: the value it has where it is used
        line, col = position_of(MAIN, "limit", 1)
        text = (await s.hover(uri, line, col + 2)).contents.value
        assert "`45 kW`" in text and "parameter" in text
        # a roll-up
        line, col = position_of(MAIN, "power <= limit")
        text = (await s.hover(uri, line, col + 1)).contents.value
        assert "`11.2 kW`" in text          # 2 hosts x 8 x 700 W
        # a stdlib item: its numbers and their source
        line, col = position_of(MAIN, "H800", 1)
        text = (await s.hover(uri, line, col + 1)).contents.value
        assert "power = 700 W" in text and "*source:*" in text and "H800" in text
        # after the rocket: UTF-16 columns
        line, col = position_of(MAIN, "power = 45 GB")
        text = (await s.hover(uri, line, col + 1)).contents.value
        assert "field `power`" in text
    on(server, scenario)


def test_definition_in_another_file_and_in_the_stdlib(server, project):
    async def scenario(s):
        uri = s.open(project / "main.astral")
        await s.diagnostics(uri, lambda ds: True)
        line, col = position_of(MAIN, "Accel", 1)      # host Node { gpus = 8 x Accel }
        loc = await s.definition(uri, line, col + 2)
        assert loc.uri == (project / "lib" / "parts.astral").as_uri()
        assert (loc.range.start.line, loc.range.start.character) == (1, 4)
        assert (loc.range.end.line, loc.range.end.character) == (1, 9)
        line, col = position_of(MAIN, "H800", 1)
        loc = await s.definition(uri, line, col)
        hardware = resources.stdlib_dir() / "hardware.astral"
        assert Path(loc.uri[len("file://"):]).resolve() == hardware.resolve()
        stdlib_lines = hardware.read_text(encoding="utf-8").split("\n")
        assert stdlib_lines[loc.range.start.line].startswith("gpu H800")
        assert loc.range.start.character == 4
        # the import names resolve too; and a parameter
        loc = await s.definition(uri, 0, utf16("import stdlib.hardware { H8"))
        assert stdlib_lines[loc.range.start.line].startswith("gpu H800")
        line, col = position_of(MAIN, "limit", 1)
        loc = await s.definition(uri, line, col)
        assert loc.uri == uri and loc.range.start.line == 3
        # references: the declaration and its uses, across files
        refs = await asyncio.wait_for(s.client.text_document_references_async(
            lsp.ReferenceParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                position=lsp.Position(line=6, character=utf16(
                                    "host Node { gpus = 8 x Ac")),
                                context=lsp.ReferenceContext(include_declaration=True))),
            TIMEOUT)
        found = sorted((Path(r.uri).name, r.range.start.line) for r in refs)
        assert found == [("main.astral", 1), ("main.astral", 6), ("parts.astral", 1)]
    on(server, scenario)


def test_completion_of_a_unit_and_a_stdlib_gpu(server, project):
    async def scenario(s):
        uri = s.open(project / "main.astral")
        await s.diagnostics(uri, lambda ds: True)
        # typing a quantity: `param limit = 45 k|`
        text = MAIN.replace("param limit = 45 kW", "param limit = 45 k")
        s.change(uri, text)
        line, col = position_of(text, "45 k")
        items = await s.complete(uri, line, col + len("45 k"))
        labels = {i.label for i in items}
        assert {"kW", "MW", "W", "BTU/h", "Gb/s"} <= labels
        assert all(i.kind == lsp.CompletionItemKind.Unit for i in items)
        # typing a GPU: `host Big { gpus = 8 x H|` offers the stdlib's GPUs
        text = MAIN.replace("gpus = 8 x H800", "gpus = 8 x H")
        s.change(uri, text)
        line, col = position_of(text, "8 x H")
        items = await s.complete(uri, line, col + len("8 x H"))
        by_label = {i.label: i for i in items}
        assert {"H800", "H100_SXM", "H200", "B200", "A100_80GB"} <= set(by_label)
        assert "gpu" in by_label["B200"].detail and "stdlib.hardware" in by_label["B200"].detail
        # one not imported yet brings its import along
        edits = by_label["B200"].additional_text_edits
        assert edits and edits[0].new_text == ", B200" and edits[0].range.start.line == 0
        assert by_label["H800"].additional_text_edits is None
        # declared names and fields complete too
        assert "Accel" in by_label and "limit" in by_label
        line, col = position_of(text, "  check power")
        items = await s.complete(uri, line, 2)
        assert {"power_limit", "utilization", "let", "check"} <= {i.label for i in items}
    on(server, scenario)


def test_symbols_and_formatting(server, project):
    messy = "param   a=1\nsite S{racks=1 x R}\nrack R { hosts = 2 x N }\nhost N {}\n"

    async def scenario(s):
        uri = s.open(project / "main.astral")
        await s.diagnostics(uri, lambda ds: True)
        symbols = await asyncio.wait_for(s.client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))),
            TIMEOUT)
        names = [sym.name for sym in symbols]
        assert names == ["stdlib.hardware", "lib.parts", "limit", "Local", "Node", "Big", "R",
                         "S"]
        rack = symbols[names.index("R")]
        assert [c.name for c in rack.children] == ["hosts"]
        other = project / "messy.astral"
        other.write_text(messy)
        uri2 = s.open(other)
        edits = await asyncio.wait_for(s.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(text_document=lsp.TextDocumentIdentifier(uri=uri2),
                                         options=lsp.FormattingOptions(tab_size=2,
                                                                       insert_spaces=True))),
            TIMEOUT)
        assert len(edits) == 1
        assert edits[0].new_text == ("param a = 1\nsite S { racks = 1 x R }\n"
                                     "rack R { hosts = 2 x N }\nhost N {}\n")
        assert (edits[0].range.end.line, edits[0].range.end.character) == (4, 0)
    on(server, scenario)


def test_completion_in_a_body_offers_only_the_kinds_declarable_there_once_each():
    """At the start of a statement in a body: the kind's fields and the kinds that can be
    declared inside it (semantics/instantiate.py `nested`), no label twice. Before, a gpu's body
    offered all 39 kinds (each an E210 or E403 there) and `power` twice (field and kind)."""
    from collections import Counter

    from astral_dsl.lsp.completion import complete

    def labels(text: str, line: int, col: int):
        items = complete(None, text, line, col)
        assert [k for k, n in Counter(i.label for i in items).items() if n > 1] == []
        return {i.label for i in items if i.detail == "kind"}, {i.label for i in items}

    kinds, every = labels("gpu G {\n  \n}\n", 1, 2)
    assert kinds == set() and "power" in every and "memory" in every
    kinds, _ = labels("host H {\n  \n}\n", 1, 2)
    assert kinds == {"gpu", "nic", "switch", "cpu"}           # the physical kinds below a host
    kinds, every = labels("site S {\n  \n}\n", 1, 2)
    assert {"rack", "hall", "feeder", "cooling", "fabric"} <= kinds and "site" not in kinds
    assert "power" in every                                    # the field (and the kind) once
    kinds, _ = labels("fabric F {\n  \n}\n", 1, 2)
    assert kinds == {"tier"}


def test_completion_after_an_indexed_path_offers_the_elements_members():
    """After `hosts[0].`: the members of a host (its fields, and the roll-ups of what it holds),
    whether `hosts` is a field of the rack or a roll-up of the row or the site (before: nothing
    there), never the roll-ups of levels above the element (a host's racks, rows or pods,
    which are always empty); a field in error says so (before: `_Poison`)."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.completion import complete

    good = textwrap.dedent("""\
        gpu G { power = 700 W }
        host H { gpus = 8 x G
          power = 7 kW
          tdp = 3 kW }
        rack R { hosts = 2 x H
          check power < 1 MW
        }
        row W { racks = 3 x R
          check power < 1 MW
        }
        site S { rows = 1 x W
          check power < 1 MW
        }
        """)
    a = analyse("file:///x.astral", None, good, 1, engineering=False)
    assert [d.code for d in a.diagnostics] == ["E203"]        # `tdp`: not a host's field
    lines = good.split("\n")

    def offered(line: int, typed: str):
        edited = list(lines)
        edited[line] = typed
        return [(i.label, i.detail) for i in complete(a, "\n".join(edited), line, len(typed))]

    host = [("gpus", "8 x gpu G"), ("power", "7 kW"), ("tdp", "in error"),
            ("nics", "roll-up"), ("cpus", "roll-up")]
    assert offered(5, "  check hosts[0].") == host               # a field of the rack
    assert offered(8, "  check hosts[0].") == host               # a roll-up of the row
    assert offered(11, "  check rows[0].racks[0].hosts[1].po") == host
    assert offered(11, "  check rows[0].racks[0].") == [
        ("hosts", "2 x host H"), ("gpus", "roll-up"), ("nics", "roll-up"), ("cpus", "roll-up"),
        ("power", "roll-up")]


def test_hover_on_a_param_of_a_large_design_does_not_compute_its_margins(monkeypatch, tmp_path):
    """The margins compile the design several times: a hover on a `param` of a 1 MB design ran
    past the request's 20 s deadline (and went on in its thread for minutes). Past MAX_CHARS
    characters of the design's own files the hover says where to get the range instead."""
    from astral_dsl.explore import margins
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover
    from astral_dsl.lsp.hover.margins import MAX_CHARS

    def never(*args, **kwargs):
        raise AssertionError("the margins were computed")

    monkeypatch.setattr(margins, "analyse", never)
    # a comment makes the text long: `limit` and its one check stay as small as they are
    text = "param limit = 45 kW\nsite S { check power <= limit }\n" + \
        "// padding\n" * (MAX_CHARS // 11 + 1)
    path = tmp_path / "big.astral"
    a = analyse(path.as_uri(), path, text, 1, engineering=False)
    found = hover(a, a.entry, 1, 7)
    assert found is not None and "**`45 kW`**" in found[0]
    assert f"not computed on hover for a design of {len(text):,} characters" in found[0]
    assert "`astral check --margins`" in found[0]


def test_the_feasible_range_of_a_param_reads_the_editors_text_of_an_open_import(tmp_path):
    """The margins of a hover read the imported files as the analysis did: an import open in
    the editor with unsaved edits (`cap = 30 kW`; 50 kW on disk) bounds `limit` at 30 kW.
    Before, the margins read the disk: 50 kW, against the analysis's own values."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover

    (tmp_path / "astral.toml").write_text("")
    lib = tmp_path / "lib.astral"
    lib.write_text("param cap = 50 kW\n")
    main = tmp_path / "main.astral"
    main.write_text("import lib { cap }\nparam limit = 10 kW\nsite S { check limit <= cap }\n")
    edited = "param cap = 30 kW\n"
    a = analyse(main.as_uri(), main, main.read_text(), 1,
                lambda p: edited if p.resolve() == lib.resolve() else None, engineering=False)
    a.inputs[str(lib.resolve())] = (edited, True)     # as the server's analysis records it
    text = hover(a, a.entry, 2, 7)[0]
    assert "`limit <= 30 kW`" in text, text


def test_hover_on_an_imported_template_the_design_does_not_use_shows_its_fields(tmp_path):
    """An import not used yet was never instantiated: the hover showed only where it is defined.
    It shows the fields as its file declares them."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover

    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "lib.astral").write_text("gpu LibGPU {\n  power = 700 W   // board power\n"
                                         "  memory = 80 GB\n}\n")
    main = "import lib { LibGPU }\nimport stdlib.hardware { B200 }\n"
    (tmp_path / "main.astral").write_text(main)
    a = analyse((tmp_path / "main.astral").as_uri(), tmp_path / "main.astral", main, 1,
                engineering=False)
    text, _ = hover(a, a.entry, 1, main.index("LibGPU") + 1)
    assert "- `power = 700 W`  \n- `memory = 80 GB`" in text
    assert "as declared (the design does not use it yet)" in text
    line2 = main.split("\n")[1]
    text, _ = hover(a, a.entry, 2, line2.index("B200") + 1)
    assert "- `power = 1000 W`" in text and "*source:* NVIDIA DGX B200" in text


def test_completion_after_a_template_the_design_does_not_use_offers_its_fields():
    """After `hw.H200.` (a module alias) or `H100.` (an imported name) of a stdlib template no
    instance of the design uses: nothing (the members came from evaluated instances alone), and
    a name ending in a digit (`H200.`) read as a number being typed (`1.`). Now the fields the
    template declares, then its bases' (H100 = H100_SXM { source = ... }; DGX_H100 =
    HGX8(...) { ... }), from stdlib/hardware.astral."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.completion import complete

    text = ("import stdlib.hardware as hw\nimport stdlib.hardware { H100 }\n"
            "site S { hosts = 2 x hw.HGX8(gpu = hw.H100_SXM, nic = hw.CX7_400G) }\n"
            "site T { }\n")
    a = analyse("file:///x.astral", None, text, 1, engineering=False)
    assert not [d for d in a.diagnostics if d.is_error]

    def offered(typed: str):
        line = "site T { x = " + typed
        edited = text.replace("site T { }", line)
        return [(i.label, i.detail) for i in complete(a, edited, 3, len(line))]

    h200 = offered("hw.H200.")
    assert h200[:3] == [("sms", "gpu H200"), ("architecture", "gpu H200"),
                        ("vendor", "gpu H200")]
    assert ("memory", "gpu H200") in h200 and offered("hw.H200.mem") == h200
    assert offered("H100.")[:2] == [("source", "gpu H100"), ("sms", "gpu H100_SXM")]
    dgx = dict(offered("hw.DGX_H100."))
    assert (dgx["power"], dgx["cpus"], dgx["gpus"]) == ("host DGX_H100", "host DGX_H100",
                                                        "host HGX8")
    # a template the design uses: its evaluated values, as before
    assert offered("hw.H100_SXM.")[:2] == [("sms", "132"), ("architecture", "hopper")]


def test_the_chain_before_a_dot_is_read_in_linear_time():
    """Completion reads the chain of names before the last `.` on every request (`racks[0].`);
    a regular expression searched for it, anchored at the line's end, was tried from every
    position: 0.7 s of CPU for a line of 5,000 letters, 12 s for 20,000, and the thread of a
    request past its deadline cannot be stopped. Now it is read backwards, once."""
    import time

    from astral_dsl.lsp.completion import complete
    from astral_dsl.lsp.completion.context import dotted_chain

    assert dotted_chain("  x = racks[0].hosts.gp") == "racks[0].hosts"
    assert dotted_chain("f(a, Cluster.pods[i + 1].") == "Cluster.pods[i + 1]"
    assert dotted_chain("9H200.") == "H200"          # a name starts with a letter or `_`
    assert dotted_chain("a..b.") == "b"              # `a.` is not a name before `.b`
    assert dotted_chain("a.9b") is None and dotted_chain("a.b ") is None
    assert dotted_chain("x]. ") is None and dotted_chain("]x.") == "x"
    for line in ("a" * 100_000 + " ", "a." * 50_000 + " ", "x = " + "a." * 50_000):
        start = time.thread_time()
        complete(None, line, 0, len(line))
        assert time.thread_time() - start < 5, line[:10]     # about 0.1 s; 300 s before
