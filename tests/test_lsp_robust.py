"""The language server stays responsive, driven over stdio by a real client as in test_lsp.py:
invalid params and unknown documents get error responses; an analysis that runs past the time
limit is stopped (E407) and later requests are served; the project scan for references skips
FIFOs, devices and links out of the project; a 5 MB document is formatted and outlined off the
event loop while other requests are answered."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

sys.path.insert(0, str(Path(__file__).parent))
from test_lsp import TIMEOUT, Session, run  # noqa: E402

SMALL = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "main.astral").write_text(SMALL)
    return tmp_path


async def _raw(s: Session, method: str, params) -> object:
    """A request with raw JSON params (not checked by the client's types)."""
    return await asyncio.wait_for(s.client.protocol.send_request_async(method, params), TIMEOUT)


def _hover_params(uri, line, character):
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


@pytest.mark.parametrize("position", [(-1, 0), (0, -1), (2 ** 31, 0), (0, 2 ** 31), ("a", 0),
                                      (None, 0), (0.5, 0)])
def test_invalid_params_get_an_error_response(project, position):
    async def scenario():
        async with Session(project) as s:
            uri = s.open(project / "main.astral")
            await s.diagnostics(uri, lambda ds: True)
            with pytest.raises(JsonRpcException) as exc:
                await _raw(s, "textDocument/hover", _hover_params(uri, *position))
            assert exc.value.code == -32602, exc.value
            # and the server goes on answering
            h = await s.hover(uri, 0, 17)
            assert h is not None and "700 W" in h.contents.value
    run(scenario())


def test_params_of_the_wrong_shape_get_an_error_response(project):
    async def scenario():
        async with Session(project) as s:
            uri = s.open(project / "main.astral")
            await s.diagnostics(uri, lambda ds: True)
            for method, params in [("textDocument/hover", {"textDocument": uri}),
                                   ("textDocument/definition", [1, 2, 3]),
                                   ("textDocument/formatting", {}),
                                   ("textDocument/completion", "text")]:
                with pytest.raises(JsonRpcException) as exc:
                    await _raw(s, method, params)
                assert exc.value.code == -32602, (method, exc.value)
    run(scenario())


def test_a_position_past_the_end_is_answered(project):
    async def scenario():
        async with Session(project) as s:
            uri = s.open(project / "main.astral")
            await s.diagnostics(uri, lambda ds: True)
            assert await s.hover(uri, 10 ** 6, 10 ** 6) is None
            assert await s.definition(uri, 2 ** 31 - 1, 2 ** 31 - 1) is None
            items = await s.complete(uri, 10 ** 6, 0)
            assert isinstance(items, list)
    run(scenario())


def test_an_unknown_document_gets_an_error_response(project):
    async def scenario():
        async with Session(project) as s:
            s.open(project / "main.astral")
            ghost = (project / "never-opened.astral").as_uri()
            doc = {"textDocument": {"uri": ghost}}
            at = {"position": {"line": 0, "character": 0}}
            for method, params in [
                    ("textDocument/hover", {**doc, **at}),
                    ("textDocument/definition", {**doc, **at}),
                    ("textDocument/references", {**doc, **at,
                                                 "context": {"includeDeclaration": True}}),
                    ("textDocument/completion", {**doc, **at}),
                    ("textDocument/documentSymbol", doc),
                    ("textDocument/formatting", {**doc, "options": {"tabSize": 2,
                                                                    "insertSpaces": True}})]:
                with pytest.raises(JsonRpcException) as exc:
                    await _raw(s, method, params)
                assert exc.value.code == -32602 and "not open" in exc.value.message, method
    run(scenario())


SLOW = "let grid = [[i * j for j in 0..400] for i in 0..400]\nsite S { }\n"


def test_an_analysis_past_the_time_limit_is_stopped_and_later_requests_are_served(project):
    """160,000 evaluations take about a second; with a limit of 0.2 s the analysis is stopped
    with E407, and once the text is fixed the server answers as usual."""
    async def scenario():
        async with Session(project, extra=["--time-limit", "0.2"]) as s:
            uri = s.open(project / "main.astral", SLOW)
            diags = await s.diagnostics(uri, lambda ds: bool(ds))
            assert [d.code for d in diags] == ["E407"], [d.message for d in diags]
            assert "time limit" in diags[0].message
            s.change(uri, SMALL)
            await s.diagnostics(uri, lambda ds: ds == [])
            h = await s.hover(uri, 0, 17)
            assert h is not None and "700 W" in h.contents.value
    run(scenario())


def test_the_project_scan_skips_fifos_devices_and_links_out(tmp_path: Path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "astral.toml").write_text("")
    (project / "main.astral").write_text(SMALL)
    (project / "other.astral").write_text("host H2 = H\n")
    outside = tmp_path / "outside.astral"
    outside.write_text("import main { H }\nhost Secret = H\n")
    (project / "link.astral").symlink_to(outside)
    os.mkfifo(project / "fifo.astral")
    if os.geteuid() == 0:
        os.mknod(project / "zero.astral", 0o666 | 0o020000, os.makedev(1, 5))   # /dev/zero

    async def scenario():
        async with Session(project) as s:
            uri = s.open(project / "main.astral")
            await s.diagnostics(uri, lambda ds: True)
            refs = await asyncio.wait_for(s.client.text_document_references_async(
                lsp.ReferenceParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                    position=lsp.Position(line=1, character=6),
                                    context=lsp.ReferenceContext(include_declaration=True))),
                TIMEOUT)
            files = sorted({Path(r.uri).name for r in refs})
            assert files == ["main.astral"], files
    run(scenario())


def test_a_big_document_does_not_block_the_event_loop(project):
    """Formatting and outlining 5 MB run off the event loop: a hover on another document,
    sent after them, is answered before them."""
    big = "param p0 = 1\n" + "".join(f"let   v{i} = {i}   kW\n" for i in range(300_000))
    assert len(big) > 5_000_000

    async def scenario():
        async with Session(project, extra=["--time-limit", "600"]) as s:
            small = s.open(project / "main.astral")
            await s.diagnostics(small, lambda ds: True)
            uri = s.open(project / "big.astral", big)
            order = []

            async def timed(name, coro):
                result = await coro
                order.append(name)
                return result

            fmt = asyncio.ensure_future(timed("format", asyncio.wait_for(
                s.client.text_document_formatting_async(lsp.DocumentFormattingParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    options=lsp.FormattingOptions(tab_size=2, insert_spaces=True))), 600)))
            await asyncio.sleep(0.5)
            hover = await timed("hover", s.hover(small, 0, 17))
            assert hover is not None and "700 W" in hover.contents.value
            edits = await fmt
            assert order == ["hover", "format"], order
            assert edits and edits[0].new_text.startswith("param p0 = 1\nlet v0 = 0 kW\n")
    run(scenario())
