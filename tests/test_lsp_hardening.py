"""The language server against a hostile client, over raw JSON-RPC (no LSP library on the client
side, so that malformed requests can be sent): invalid params get an error response, an unknown
document gets an error (never a traceback, never a file read from disk), a project scan skips
FIFOs, devices and links out of the project, an analysis past its deadline is stopped (E407)
without blocking later requests, and formatting or the outline of a large document runs off the
event loop. The server is this checkout (`python -m astral_dsl.cli lsp`, conftest.py's
PYTHONPATH)."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

# a guard against a hang, not a speed assertion: every request below is answered in well under a
# second on an idle machine
WAIT = 90

SMALL = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"


class Client:
    """A JSON-RPC client over the server's stdin/stdout."""

    def __init__(self, cwd: Path, *args: str, env: Optional[dict] = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "astral_dsl.cli", "lsp", "--debounce", "0.05", *args],
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env)
        self.responses: "queue.Queue" = queue.Queue()
        self.notes: list = []
        self.next_id = 1
        self.pending: dict = {}
        self.opened: set = set()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.responses.put(None)
                    return
                if not line.strip():
                    break
                key, value = line.decode().split(":", 1)
                headers[key.strip().lower()] = value.strip()
            msg = json.loads(out.read(int(headers["content-length"])))
            if "id" in msg and ("result" in msg or "error" in msg):
                self.responses.put(msg)
            else:
                self.notes.append(msg)

    def send(self, obj) -> None:
        data = json.dumps(obj).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def start(self, method: str, params) -> int:
        i, self.next_id = self.next_id, self.next_id + 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i

    def wait(self, i: int, timeout: float = WAIT) -> dict:
        end = time.monotonic() + timeout
        while i not in self.pending:
            msg = self.responses.get(timeout=max(0.01, end - time.monotonic()))
            assert msg is not None, "the server died"
            self.pending[msg["id"]] = msg
        return self.pending.pop(i)

    def request(self, method: str, params, timeout: float = WAIT) -> dict:
        return self.wait(self.start(method, params), timeout)

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.opened.add(uri)
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "astral", "version": version, "text": text}})

    def published(self, uri: str, timeout: float = WAIT) -> list:
        """The diagnostics of the latest publication for `uri` with a version (waits for one)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for note in reversed(self.notes):
                p = note.get("params") or {}
                if note.get("method") == "textDocument/publishDiagnostics" and \
                        p.get("uri") == uri and p.get("version") is not None:
                    return p["diagnostics"]
            time.sleep(0.05)
        raise AssertionError(f"no diagnostics for {uri}")

    def close(self) -> None:
        """Ended as an editor ends a server (SIGTERM), so that it cleans up after itself; killed
        only if it does not end (a kill left a /tmp/pymp-* directory behind each time)."""
        self.proc.terminate()
        try:
            self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One server for the tests of this file that need no fresh one (not those of a deadline,
    of the input's end or of an announced length): each test has a project folder of its own
    (the server finds a document's project from its astral.toml, not from the root it started
    in), and closes what it opened. A start costs ~0.8 s of CPU (importing lsprotocol)."""
    root = tmp_path_factory.mktemp("lsp-server")
    client = Client(root)
    r = client.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                      "capabilities": {}})
    assert "result" in r
    client.notify("initialized", {})
    yield client
    client.close()


@pytest.fixture
def server(shared_server, tmp_path):
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "main.astral").write_text(SMALL)
    yield shared_server, tmp_path
    for uri in shared_server.opened:
        shared_server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    shared_server.opened.clear()


def _hover(uri: str, line: int = 0, character: int = 4) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def _no_traceback(response: dict) -> None:
    assert "Traceback" not in json.dumps(response)


BAD_POSITIONS = [{"line": -1, "character": 0}, {"line": 0, "character": -1},
                 {"line": 2 ** 31, "character": 0}, {"line": 10 ** 30, "character": 0},
                 {"line": "a", "character": 0}, {"line": 0},
                 # read as line 1, column 4, line 1 and line 1 (cattrs took them for ints): a
                 # hover at line 1.5 was answered with line 1's
                 {"line": 1.5, "character": 0}, {"line": 0, "character": 4.5},
                 {"line": "1", "character": 0}, {"line": True, "character": 0}]


def test_invalid_params_get_an_error_response(server):
    client, root = server
    uri = (root / "main.astral").as_uri()
    client.open(uri, SMALL)
    client.published(uri)
    for method in ("textDocument/hover", "textDocument/definition", "textDocument/completion",
                   "textDocument/references"):
        for pos in BAD_POSITIONS:
            params = {"textDocument": {"uri": uri}, "position": pos,
                      "context": {"includeDeclaration": True}}
            r = client.request(method, params)
            assert r["error"]["code"] == -32602, (method, pos, r)       # InvalidParams
            assert "$.params.position" in r["error"]["message"], r
            _no_traceback(r)
    for params in (None, [1, 2], {"textDocument": "x", "position": {"line": 0, "character": 0}},
                   {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 4}}):
        r = client.request("textDocument/references", params)    # the last: no `context`
        assert r["error"]["code"] == -32602, (params, r)
    # the server still answers a good request: `G` of `gpu G` at line 0, column 4 (an integer
    # written with a point is one)
    r = client.request("textDocument/hover", _hover(uri))
    assert "G" in r["result"]["contents"]["value"]
    assert client.request("textDocument/hover", _hover(uri, 0.0, 4.0))["result"] == r["result"]


def test_an_unknown_document_is_an_error_not_a_file_read(server):
    client, root = server
    (root / "closed.astral").write_text(SMALL)       # on disk, but not open in the editor
    for uri in ((root / "closed.astral").as_uri(), (root / "nothere.astral").as_uri(),
                "untitled:Untitled-1", "http://evil/x.astral"):
        for method, params in (
                ("textDocument/hover", _hover(uri)),
                ("textDocument/definition", _hover(uri)),
                ("textDocument/completion", _hover(uri)),
                ("textDocument/references", dict(_hover(uri),
                                                 context={"includeDeclaration": True})),
                ("textDocument/documentSymbol", {"textDocument": {"uri": uri}}),
                ("textDocument/formatting", {"textDocument": {"uri": uri},
                                             "options": {"tabSize": 2, "insertSpaces": True}})):
            r = client.request(method, params)
            assert r["error"]["code"] == -32602, (uri, method, r)
            assert "not an open document" in r["error"]["message"]
            _no_traceback(r)


def test_a_document_whose_path_a_uri_quotes_is_analysed_and_answered(server):
    """A folder with a space is `my%20project` in the client's URI; pygls keys its documents
    by the unquoted URI. Before, such a document was never analysed (no diagnostics at all)
    and every request about it was "not an open document"."""
    client, root = server
    folder = root / "my project é"
    folder.mkdir()
    (folder / "astral.toml").write_text("")
    uri = (folder / "main.astral").as_uri()
    assert "%20" in uri and "%C3%A9" in uri
    client.open(uri, SMALL.replace("700 W", "700 kg"))
    codes = [d["code"] for d in client.published(uri)]
    assert codes == ["E304"], codes                        # 700 kg is not a power
    r = client.request("textDocument/hover", _hover(uri))
    assert "G" in r["result"]["contents"]["value"], r


def test_a_document_whose_uri_holds_a_nul_is_a_text_of_its_own_and_harms_no_other(server):
    """`%00` in a file URI: no file can have that path, and each resolve or stat of it raised
    ValueError. Before, the document was E000 ("embedded null byte"), and while it stayed open
    every other document's analysis was E000 too ("the analysis worker ended": the worker read
    the open documents' paths before its own try) and each later open or save logged "a
    notification was not handled". Now it is analysed as an unsaved text is, and the others
    as if it were not there."""
    client, root = server
    nul = root.as_uri() + "/a%00b.astral"
    before = len(client.notes)
    client.open(nul, SMALL.replace("700 W", "700 kg"))
    assert [d["code"] for d in client.published(nul)] == ["E304"]      # 700 kg: not a power
    other = (root / "main.astral").as_uri()
    client.open(other, SMALL.replace("700 W", "7 kg"))
    assert [d["code"] for d in client.published(other)] == ["E304"]
    r = client.request("textDocument/hover", _hover(nul))
    assert "G" in r["result"]["contents"]["value"], r
    logged = [n["params"]["message"] for n in client.notes[before:]
              if n.get("method") == "window/logMessage"]
    assert not any("not handled" in m for m in logged), logged


def test_a_change_of_a_document_never_opened_is_no_error_popup(server):
    """A client that breaks the protocol: a didChange of a document it never opened. pygls
    raised KeyError, shown in the editor as "Error in server: KeyError". A change of the whole
    text opens the document with it (and it is analysed); a change of a range of an unknown
    text is ignored; neither shows a message, and the server goes on."""
    client, root = server
    whole = (root / "never.astral").as_uri()
    ranged = (root / "never2.astral").as_uri()
    before = len(client.notes)
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": ranged, "version": 3},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                      "end": {"line": 0, "character": 0}}, "text": "x"}]})
    client.notify("textDocument/didChange", {"textDocument": {"uri": whole, "version": 2},
                                             "contentChanges": [{"text": SMALL}]})
    client.opened.add(whole)
    assert client.published(whole) is not None            # analysed as if opened
    r = client.request("textDocument/hover", _hover(whole))
    assert "G" in r["result"]["contents"]["value"], r
    r = client.request("textDocument/hover", _hover(ranged))
    assert r["error"]["code"] == -32602                    # still not open
    # notifications whose params do not validate: logged (window/logMessage), no popup either
    client.notify("textDocument/didOpen", {"textDocument": {"uri": ranged, "version": 1,
                                                            "languageId": "astral"}})
    client.notify("textDocument/didOpen", None)
    r = client.request("textDocument/hover", _hover(whole))   # after both: they were handled
    assert "G" in r["result"]["contents"]["value"], r
    shown = [n for n in client.notes[before:] if n.get("method") == "window/showMessage"]
    assert shown == []
    logged = [n["params"]["message"] for n in client.notes[before:]
              if n.get("method") == "window/logMessage"]
    assert sum("a notification was not handled" in m for m in logged) == 2, logged


@pytest.mark.parametrize("hostile", ["fifo", "device", "outside"])
def test_the_project_scan_skips_fifos_devices_and_links_out(server, tmp_path_factory, hostile):
    client, root = server
    outside = tmp_path_factory.mktemp("outside") / "secret.astral"
    outside.write_text("import main { G }\nhost Secret { gpus = 1 x G }\n")
    if hostile == "fifo":
        os.mkfifo(root / "pipe.astral")              # reading it would block for good
    elif hostile == "device":
        os.symlink("/dev/zero", root / "zero.astral")   # reading it would never end
    else:
        os.symlink(outside, root / "link.astral")    # a file outside the project
    (root / "other.astral").write_text("import main { G }\nhost Other { gpus = 2 x G }\n")
    uri = (root / "main.astral").as_uri()
    client.open(uri, SMALL)
    r = client.request("textDocument/references",
                       dict(_hover(uri), context={"includeDeclaration": True}))
    files = sorted({Path(loc["uri"][len("file://"):]).name for loc in r["result"]})
    assert files == ["main.astral", "other.astral"], r          # the link out is not read
    # and the server answers afterwards (the scan blocked nothing)
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": SMALL + "\n"}]})
    assert "result" in client.request("textDocument/hover", _hover(uri))


def _slow_design(n: int) -> str:
    """A design whose analysis takes seconds: n `let`s, each used by the next."""
    return "".join(f"let a{i} = {i} W\n" if i == 0 else f"let a{i} = a{i - 1} + 1 W\n"
                   for i in range(n)) + SMALL


def test_a_slow_analysis_is_stopped_and_blocks_nothing(tmp_path):
    (tmp_path / "astral.toml").write_text("")
    client = Client(tmp_path, "--timeout", "1")
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                      "capabilities": {}})
        client.notify("initialized", {})
        slow, fast = (tmp_path / "slow.astral").as_uri(), (tmp_path / "fast.astral").as_uri()
        client.open(slow, _slow_design(40000))
        client.open(fast, SMALL)
        # the other document is analysed and answered meanwhile
        assert "result" in client.request("textDocument/hover", _hover(fast))
        diagnostics = client.published(slow)
        assert [d["code"] for d in diagnostics] == ["E407"], diagnostics
        assert "longer than 1 s" in diagnostics[0]["message"]
        # the fixed text is analysed afresh
        client.notify("textDocument/didChange", {"textDocument": {"uri": slow, "version": 2},
                                                 "contentChanges": [{"text": SMALL}]})
        r = client.request("textDocument/hover", _hover(slow))
        assert "G" in r["result"]["contents"]["value"]
        assert all(d.get("code") != "E407" for d in client.published(slow))
    finally:
        client.close()


def test_formatting_and_outline_of_a_large_document_run_off_the_event_loop(server):
    client, root = server
    big = (root / "big.astral").as_uri()
    small = (root / "main.astral").as_uri()
    client.open(small, SMALL)
    # the small document's analysis done before the race: `published` returns on the
    # worker's diagnostics, published before the in-process compile a hover reads (which the
    # hover below then waited for, with the large document's formatting and analysis
    # competing for the CPU: under load the formatting could answer first)
    assert "G" in client.request("textDocument/hover", _hover(small))["result"]["contents"][
        "value"]
    # ~300 kB: formatting it or outlining it takes a second or more of CPU (its analysis too),
    # a hover on the small document a few milliseconds
    client.open(big, "".join(f"gpu G{i} {{ power = {i} W }}\n" for i in range(10000)))
    fmt = client.start("textDocument/formatting", {"textDocument": {"uri": big},
                                                   "options": {"tabSize": 2,
                                                               "insertSpaces": True}})
    outline = client.start("textDocument/documentSymbol", {"textDocument": {"uri": big}})
    hover = client.start("textDocument/hover", _hover(small))
    first = client.responses.get(timeout=WAIT)
    assert first is not None and first["id"] == hover, first      # answered while they run
    assert "G" in first["result"]["contents"]["value"]
    for i in (fmt, outline):
        r = client.wait(i, timeout=300)
        # either done, or stopped at the deadline with RequestFailed (-32803): never silence
        assert "result" in r or r["error"]["code"] == -32803, r
        _no_traceback(r)


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_message_past_the_size_limit_is_skipped_and_the_server_goes_on(server):
    """64 MiB + 1 byte of a valid message: read and thrown away in chunks (the stream stays in
    step), the editor told why (window/logMessage), the next request answered."""
    from astral_dsl.lsp.transport import MAX_MESSAGE

    client, root = server
    uri = (root / "main.astral").as_uri()
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "astral", "version": 1,
                         "text": "x" * MAX_MESSAGE}}}).encode()
    assert len(body) > MAX_MESSAGE
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body))
    for i in range(0, len(body), 1 << 20):
        client.proc.stdin.write(body[i:i + (1 << 20)])
    client.proc.stdin.flush()
    r = client.request("textDocument/hover", _hover(uri))
    assert r["error"]["code"] == -32602           # the big didOpen never happened: not open
    logs = [n["params"]["message"] for n in client.notes if n.get("method") == "window/logMessage"]
    assert any(f"a message of {len(body)} bytes was skipped" in m for m in logs), logs
    client.open(uri, SMALL)
    assert client.published(uri) is not None
    assert "result" in client.request("textDocument/hover", _hover(uri))


def test_a_buffer_past_the_file_cap_is_e108_as_its_file_would_be(server):
    """An editor's buffer (and an import that is an open buffer) of more than 8 MiB is refused
    as `astral check` refuses the file (E108), not compiled: the compiler's memory grows with
    its text (a 20 MB buffer was analysed)."""
    from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES

    client, root = server
    text = "site S { }\n// " + "x" * MAX_SOURCE_BYTES + "\n"      # 8 MiB + 11 + 3 + 1 bytes
    big = (root / "big.astral").as_uri()
    client.open(big, text)
    (d,) = client.published(big)
    assert d["code"] == "E108" and d["severity"] == 1, d
    assert f"is too large to compile ({MAX_SOURCE_BYTES + 15:,} bytes; the limit is 8 MiB)" \
        in d["message"], d
    (root / "big.astral").write_text("site S { }\n")     # on disk, small: the buffer is read
    main = (root / "main.astral").as_uri()
    client.open(main, "import big\n" + SMALL)
    codes = {(x["code"], x["range"]["start"]["line"]) for x in client.published(main)}
    assert ("E108", 0) in codes, codes                 # at the import, line 1


@pytest.mark.parametrize("length", [b"100000000000", b"9" * 5000], ids=["1e11", "5000-digits"])
def test_an_announced_length_is_never_allocated(tmp_path, length):
    """`Content-Length: 10^11` (pygls allocated it: 100 GB) or a 5,000-digit length (past
    Python's integer conversion limit: pygls stopped): the server reads what comes in chunks,
    stays small and alive, and ends cleanly when the input does."""
    client = Client(tmp_path)
    try:
        assert "result" in client.request("initialize", {"processId": None,
                                                         "rootUri": tmp_path.as_uri(),
                                                         "capabilities": {}})
        client.proc.stdin.write(b"Content-Length: " + length + b"\r\n\r\n" + b"{" * (4 << 20))
        client.proc.stdin.flush()
        time.sleep(1.0)
        assert client.proc.poll() is None, "the server died"
        assert _peak_rss_mb(client.proc.pid) < 1024
        client.proc.stdin.close()
        assert client.proc.wait(timeout=WAIT) is not None
    finally:
        client.close()


def test_a_change_past_the_end_of_the_text_is_fitted_and_logged(server):
    """A range past the text was applied without a word, and pygls 2.1 fits a character past
    the end of a line to one before it (its `_client_len - 1`, meant for the line break): on a
    last line without a line break the edit went in before its last character (`... 700 W
    <edit>}`). The range is fitted to the text (LSP: a character past the line's end "defaults
    back to the line length"; a line past the last, the end of the text) and logged."""
    client, root = server
    uri = (root / "ranges.astral").as_uri()
    client.open(uri, "gpu G { power = 700 W }")           # 23 characters, no line break
    before = len(client.notes)
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [
        # at (0, 23), after the `}` (it went in before it: G's body swallowed H)
        {"range": {"start": {"line": 0, "character": 99}, "end": {"line": 0, "character": 99}},
         "text": "\nhost H { gpus = 2 x G }"},
        # the text is now 2 lines: (7, 0) is past them, applied at its end (1, 23)
        {"range": {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 5}},
         "text": "\nsite S { hosts = 1 x H }\n"}]})
    r = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert "result" in r, r        # an error response says which (seen once under heavy load)
    lines = {s["name"]: s["range"]["start"]["line"] for s in r["result"]}
    assert lines == {"G": 0, "H": 1, "S": 2}, r
    logged = [n["params"]["message"] for n in client.notes[before:]
              if n.get("method") == "window/logMessage"]
    assert [m.split(": ", 2)[2] for m in logged if "runs past the text" in m] == [
        "the range 0:99-0:99 runs past the text; applied at 0:23-0:23",
        "the range 7:0-7:5 runs past the text; applied at 1:23-1:23"], logged


def test_a_change_whose_range_ends_before_it_starts_is_said_so(server):
    """A range whose end is before its start was logged as one that "runs past the text",
    which it need not: it is applied at its start, and said so."""
    client, root = server
    uri = (root / "reversed.astral").as_uri()
    client.open(uri, SMALL)
    before = len(client.notes)
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [
        {"range": {"start": {"line": 2, "character": 4}, "end": {"line": 1, "character": 0}},
         "text": "  "}]})
    r = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [s["name"] for s in r["result"]] == ["G", "H", "S"], r
    logged = [n["params"]["message"] for n in client.notes[before:]
              if n.get("method") == "window/logMessage"]
    assert [m.split(": ", 2)[2] for m in logged if "didChange" in m] == [
        "the range 2:4-1:0 ends before it starts; applied at 2:4-2:4"], logged


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x85"])
def test_an_edit_below_a_unicode_line_separator_lands_on_the_editors_line(server, separator):
    """A comment holding U+2028, a form feed or U+0085 is one line for the editor (LSP: lines
    end at \\n, \\r\\n or \\r) and for the compiler, but pygls applied an edit on Python's
    splitlines, which end a line there too: the edit of `G` on line 1 went in one line too
    high (`// note<sep>moreK`), and the server's text was no longer the editor's."""
    client, root = server
    uri = (root / "separator.astral").as_uri()
    client.open(uri, f"// note{separator}more\ngpu G {{ power = 700 W }}\n")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [
        {"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
         "text": "K"}]})
    r = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [(x["name"], x["range"]["start"]["line"]) for x in r["result"]] == [("K", 1)], r


def test_an_edit_is_applied_on_lsps_lines_in_the_clients_units():
    from lsprotocol import types as lsp

    from astral_dsl.lsp.protocol import edited, lsp_lines

    def rng(a, b, c, d):
        return lsp.Range(start=lsp.Position(line=a, character=b),
                         end=lsp.Position(line=c, character=d))

    assert lsp_lines("a\r\nb\rc\u2028d\x0ce\n") == ["a\r\n", "b\r", "c\u2028d\x0ce\n"]
    assert lsp_lines("ab") == ["ab"] and lsp_lines("") == []

    def utf16(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    # the emoji is 2 UTF-16 units: the `1` after it is at character 11 of line 1
    assert edited("x\u2028y\nv = '\U0001f600' + 1\n", rng(1, 11, 1, 12), "2", utf16) == \
        "x\u2028y\nv = '\U0001f600' + 2\n"
    assert edited("a\r\nbc", rng(0, 1, 1, 1), "", len) == "ac"      # across a CRLF


def test_the_ranges_of_one_change_are_spliced_into_the_lines_as_into_the_text():
    """A didChange's ranges are applied to one list of lines (`splice`, the lines each spans)
    instead of each splitting the whole text again (an editor's replace-all of 20,000 matches
    in a file of 5,000 lines held the event loop for over a minute): the text is the one
    `edited` gives, range after range, whatever the line ends (a `\r` before a `\n` edited in,
    a CRLF cut in two), the characters (in UTF-16 units) and ranges past the text."""
    import random

    from lsprotocol import types as lsp

    from astral_dsl.lsp.protocol import edited, fit_range, lsp_lines, splice

    def utf16(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    pieces = ["a", "bc", "\n", "\r", "\r\n", "\U0001f600", "\u2028", " ", ""]
    rnd = random.Random(64)
    for _ in range(300):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randrange(0, 12)))
        lines = lsp_lines(text)
        for _ in range(rnd.randrange(1, 8)):
            a = lsp.Position(line=rnd.randrange(0, 5), character=rnd.randrange(0, 5))
            b = lsp.Position(line=rnd.randrange(0, 5), character=rnd.randrange(0, 5))
            new = "".join(rnd.choice(pieces) for _ in range(rnd.randrange(0, 4)))
            fitted = fit_range(lsp_lines(text), lsp.Range(start=a, end=b), utf16)
            assert fit_range(lines, lsp.Range(start=a, end=b), utf16) == fitted
            text = edited(text, fitted, new, utf16)
            splice(lines, fitted, new, utf16)
            assert lines == lsp_lines(text), (text, lines)


def test_fit_range_keeps_a_range_within_the_text():
    from lsprotocol import types as lsp

    from astral_dsl.lsp.protocol import fit_range

    def rng(a, b, c, d):
        return lsp.Range(start=lsp.Position(line=a, character=b),
                         end=lsp.Position(line=c, character=d))

    lines = ["ab\n", "cde"]                       # no final line break: the end is (1, 3)
    assert fit_range(lines, rng(0, 1, 1, 2), len) == rng(0, 1, 1, 2)
    assert fit_range(lines, rng(0, 5, 0, 9), len) == rng(0, 2, 0, 2)
    assert fit_range(lines, rng(1, 1, 4, 0), len) == rng(1, 1, 1, 3)
    assert fit_range(["ab\n"], rng(1, 0, 1, 0), len) == rng(1, 0, 1, 0)   # after the break
    assert fit_range(["ab\n"], rng(1, 4, 3, 0), len) == rng(1, 0, 1, 0)
    assert fit_range([], rng(2, 2, 2, 2), len) == rng(0, 0, 0, 0)          # an empty text


def test_the_project_scan_does_not_walk_down_the_filesystem_root_or_home(tmp_path, monkeypatch):
    # `file:///x.astral` makes `/` the project root, a file in ~ the home: only the folder's own
    # files are listed, no folder below it is read
    import astral_dsl.lsp.analysis as analysis

    home = tmp_path / "home"
    (home / "deep").mkdir(parents=True)
    (home / "a.astral").write_text("")
    (home / "deep" / "b.astral").write_text("")
    monkeypatch.setenv("HOME", str(home))
    assert [p.name for p in analysis.project_files(home)] == ["a.astral"]
    walked = []
    real_walk = os.walk

    def spy(top, *a, **k):
        for folder, dirs, files in real_walk(top, *a, **k):
            walked.append(folder)
            yield folder, dirs, files

    monkeypatch.setattr(os, "walk", spy)
    analysis.project_files(Path("/"))
    assert walked == ["/"]
    analysis.project_files(tmp_path)                    # any other folder is walked down
    assert [Path(f).name for f in walked[1:]] == [tmp_path.name, "home", "deep"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_server_an_editor_ends_by_a_signal_exits_and_leaves_nothing_behind(tmp_path, signum):
    """An editor closing (SIGTERM) or a terminal hanging up (SIGHUP) ends the server while its
    thread that reads the input is blocked: it exits at once with 128 + the signal, its worker
    processes ended and the fork server's socket directory removed. Before, SIGTERM ended it
    without cleanup, leaving a pymp-* directory in the temporary directory every time (and a
    SIGTERM that only raised SystemExit hung: pygls waited for the blocked reader)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    (tmp_path / "astral.toml").write_text("")
    client = Client(tmp_path, env=dict(os.environ, TMPDIR=str(temp)))
    try:
        assert "result" in client.request("initialize", {
            "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
        client.notify("initialized", {})
        uri = (tmp_path / "main.astral").as_uri()
        client.open(uri, SMALL)
        client.published(uri)                       # a worker of the fork server analysed it
        assert [p.name for p in temp.iterdir() if p.name.startswith("pymp-")]
        workers = _descendants(client.proc.pid)     # the fork server and its workers
        assert workers
        client.proc.send_signal(signum)
        assert client.proc.wait(WAIT) == 128 + signum
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    assert list(temp.iterdir()) == []
    end = time.monotonic() + WAIT                  # none of them left running (a moment)
    while [w for w in workers if _running(w)] and time.monotonic() < end:
        time.sleep(0.05)
    assert [w for w in workers if _running(w)] == []


def _descendants(pid: int) -> list:
    """The processes below `pid` (Linux's /proc/PID/task/TID/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in os.listdir(f"/proc/{p}/task"):
            with open(f"/proc/{p}/task/{task}/children", encoding="ascii") as fh:
                kids = [int(k) for k in fh.read().split()]
            out += kids
            todo += kids
    return out


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting for its parent does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


_CLOSING = """
import os, signal, sys
from astral_dsl.lsp import server as s
built = s.build
def build(*args, **kwargs):
    srv = built(*args, **kwargs)
    close = srv.checker.close
    def closing():                        # the editor's SIGTERM while the workers are closed
        os.kill(os.getpid(), signal.SIGTERM)
        close()
        open(sys.argv[1], "w").write("closed")
    srv.checker.close = closing
    return srv
s.build = build
sys.exit(s.serve())
"""


def test_a_signal_while_the_server_closes_lets_it_close(tmp_path):
    """An editor sends `exit` and soon after SIGTERM: a SIGTERM arriving while the server closed
    its workers raised SystemExit there, cutting the closing short (its workers and fork
    server's directory left); it is noted, the closing ends, and the server exits with 143."""
    mark = tmp_path / "closed"
    proc = subprocess.run([sys.executable, "-c", _CLOSING, str(mark)], input=b"",
                          capture_output=True, timeout=WAIT, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-2000:]
    assert mark.read_text() == "closed"
