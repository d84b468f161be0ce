"""The language server's framing against a client that breaks it: a message whose
Content-Length is short, not a number, missing, or spelt in lower case left its body with no
line end, so it ran into the next header line, which pygls then did not take for one; every
message after it was lost the same way, and the server answered nothing more (an editor saw it
hang). transport.BoundedInput finds the header at the end of such a line: one bad message costs
itself only."""
from __future__ import annotations

import io
import json
import re

import pytest

from astral_dsl.lsp.transport import BoundedInput
from test_lsp_hardening import WAIT, Client


def _frame(obj, header: bytes = b"Content-Length: %d\r\n") -> bytes:
    body = json.dumps(obj).encode()
    return header.replace(b"%d", b"%d" % len(body)) + b"\r\n" + body


BROKEN = {
    "short": b"Content-Length: 5\r\n\r\n" + json.dumps({"jsonrpc": "2.0", "method": "x"}).encode(),
    "negative": b"Content-Length: -1\r\n\r\n{}",
    "not a number": b"Content-Length: ten\r\n\r\n{}",
    "missing": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
    "lower case": _frame({"jsonrpc": "2.0", "method": "x"}, b"content-length: %d\r\n"),
    "no carriage return": _frame({"jsonrpc": "2.0", "method": "x"}, b"Content-length:%d\n"),
}


# pygls 2.1's io_.CONTENT_LENGTH_PATTERN: the only header line it takes
PYGLS_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


def _headers(data: bytes):
    """The header lines pygls gets, reading as its loop does: lines up to a blank one once it
    has a length, then that many bytes of body."""
    src, seen, length = BoundedInput(io.BytesIO(data)), [], 0
    while True:
        line = src.readline()
        if not line:
            return seen
        match = PYGLS_LENGTH.fullmatch(line)
        if not length and match:
            length = int(match.group(1))
            seen.append(line)
        elif length and not line.strip():
            src.read(length)
            length = 0


@pytest.mark.parametrize("name", list(BROKEN))
def test_the_message_after_a_broken_one_is_framed_as_sent(name):
    after = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    seen = _headers(BROKEN[name] + after + after)
    # the two messages after it (their bodies 49 bytes each) are read whole
    assert seen[-2:] == [b"Content-Length: 49\r\n"] * 2


@pytest.mark.parametrize("name", list(BROKEN))
def test_the_server_answers_after_a_broken_message(tmp_path, name):
    client = Client(tmp_path)
    try:
        assert "result" in client.request("initialize", {"processId": None,
                                                         "rootUri": tmp_path.as_uri(),
                                                         "capabilities": {}})
        client.proc.stdin.write(BROKEN[name])
        client.proc.stdin.flush()
        # was never answered (the test waited WAIT seconds and failed)
        assert client.request("shutdown", None, timeout=WAIT)["result"] is None
    finally:
        client.close()


MALFORMED = [b"{not json", b"[]", b"null", b'{"jsonrpc":"2.0","method":"x","params":"\xff"}',
             b"[" * 100_000 + b"]" * 100_000,
             json.dumps({"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover",
                         "params": "x"}).encode(),
             json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                 "textDocument": {"uri": "file:///x.astral", "languageId": "astral",
                                  "version": "a", "text": 5}}}).encode()]


def test_a_malformed_message_is_logged_in_one_line_without_a_traceback(tmp_path):
    """pygls logged each with a Python traceback (a JSON decoder's, cattrs' exception group
    boxes) into the editor's log; the server answers on as before."""
    import subprocess
    import sys

    def frame(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}
    data = frame(json.dumps(init).encode()) + b"".join(frame(m) for m in MALFORMED) + \
        frame(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}).encode()) + \
        frame(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "lsp"], input=data,
                          capture_output=True, cwd=tmp_path, timeout=WAIT)
    err = proc.stderr.decode("utf-8", "replace")
    assert b'"id": 9' in proc.stdout                     # shutdown answered
    assert "Traceback" not in err and "+----" not in err, err
    lines = err.splitlines()
    assert "ERROR:pygls.server:Unable to handle message: JSONDecodeError: Expecting property " \
           "name enclosed in double quotes: line 1 column 2 (char 1)" in lines, err
    assert "ERROR:pygls.protocol.json_rpc:Unable to deserialize message: ClassValidationError: " \
           "While structuring DidOpenTextDocumentNotification (1 sub-exception) (ValueError: " \
           "an integer, not \"a\"; Structuring class TextDocumentItem @ attribute version)" \
        in lines, err                    # (a JSON integer: protocol.converter)


def test_another_record_of_pygls_keeps_its_traceback():
    """Only the two log points of a client's malformed message are made one line: a handler's
    failure (`Failed to handle request`) is the server's own and keeps its traceback."""
    import logging

    from astral_dsl.lsp.transport import OneLine

    def record(name, msg, exc):
        return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (),
                                 (type(exc), exc, None))

    kept = record("pygls.protocol.json_rpc", "Failed to handle request %s", KeyError("k"))
    assert OneLine().filter(kept) and kept.exc_info[1].args == ("k",)
    made = record("pygls.server", "Unable to handle message", ValueError("bad"))
    assert OneLine().filter(made) and made.exc_info is None
    assert made.getMessage() == "Unable to handle message: ValueError: bad"


def test_a_request_about_a_closed_document_is_logged_in_one_line(tmp_path):
    """A hover on a document the client has not opened is answered with InvalidParams (`not an
    open document`); pygls logged the answer with a Python traceback into the editor's log."""
    import subprocess
    import sys

    def frame(obj) -> bytes:
        body = json.dumps(obj).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    uri = (tmp_path / "closed.astral").as_uri()
    data = b"".join(frame(m) for m in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}},
        {"jsonrpc": "2.0", "id": 9, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"}))
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "lsp"], input=data,
                          capture_output=True, cwd=tmp_path, timeout=WAIT)
    err = proc.stderr.decode("utf-8", "replace")
    assert b"is not an open document" in proc.stdout and b'"id": 9' in proc.stdout
    assert "Traceback" not in err, err
    assert f'ERROR:pygls.protocol.json_rpc:Request "2" answered with an error: NotOpen: `{uri}` ' \
           f"is not an open document" in err.splitlines(), err


def test_a_bug_answered_as_an_internal_error_keeps_its_traceback():
    import logging

    from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

    from astral_dsl.lsp.transport import ANSWERED, OneLine

    def record(exc):
        return logging.LogRecord("pygls.protocol.json_rpc", logging.ERROR, __file__, 1,
                                 ANSWERED, ("3",), (type(exc), exc, None))

    bug = record(JsonRpcInternalError(message="internal error in hover: KeyError: 'k'"))
    assert OneLine().filter(bug) and bug.exc_info is not None
    client = record(JsonRpcInvalidParams(message="bad"))
    assert OneLine().filter(client) and client.exc_info is None
    assert client.getMessage() == 'Request "3" answered with an error: JsonRpcInvalidParams: bad'


def _session(tmp_path, *bodies: bytes, initialize: bool = True):
    """The server's answers (by id, and those of no id in order) to `bodies` sent after
    `initialize` (or without it), then shutdown and exit; and its log."""
    import subprocess
    import sys

    def frame(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}
    data = (frame(json.dumps(init).encode()) if initialize else b"") + \
        b"".join(frame(b) for b in bodies) + \
        frame(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}).encode()) + \
        frame(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "lsp"], input=data,
                          capture_output=True, cwd=tmp_path, timeout=WAIT)
    out = [json.loads(part.split(b"\r\n\r\n", 1)[1])
           for part in proc.stdout.split(b"Content-Length: ")[1:]]
    return [m for m in out if "error" in m or "result" in m], proc.stderr.decode()


def test_a_message_that_is_no_json_rpc_message_is_answered_as_json_rpc_says(tmp_path):
    """Not JSON, not an object, an id that is an object, an id alone: pygls logged them as
    "a notification was not handled" (an object's id was answered InternalError, "unhashable
    type: 'dict'"), and the client, told nothing, waited for its request; each is answered
    ParseError or InvalidRequest now (id null where it is not known), and the server goes on."""
    bodies = [b"{not json", b"[1, 2]", b"null",
              json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}).encode(),
              json.dumps({"jsonrpc": "2.0", "id": 7}).encode()]
    answers, log = _session(tmp_path, *bodies)
    errors = [(a["id"], a["error"]["code"], a["error"]["message"]) for a in answers if
              "error" in a]
    assert errors == [
        (None, -32700, "parse error: JSONDecodeError: Expecting property name enclosed in "
                       "double quotes: line 1 column 2 (char 1)"),
        (None, -32600, 'invalid request: a message is a JSON object with `"jsonrpc": "2.0"`'),
        (None, -32600, 'invalid request: a message is a JSON object with `"jsonrpc": "2.0"`'),
        (None, -32600, "invalid request: an id is a string or a number, not an object"),
        (7, -32600, "invalid request: a message names a `method` (a request, a notification) "
                    "or holds a `result` or an `error` (a response)")]
    assert [a["id"] for a in answers if "result" in a] == [1, 99]
    assert "Traceback" not in log and "notification was not handled" not in log, log


def test_another_json_rpc_version_and_a_method_not_a_string_are_invalid_requests(tmp_path):
    """`"jsonrpc": "1.0"` was dropped without a word (the client waited for its answer for
    good), and a method that is a number was answered InternalError with pygls's TypeError
    ("can only concatenate str (not \"int\") to str"); each is InvalidRequest now, answered
    with its id."""
    bodies = [json.dumps({"jsonrpc": "1.0", "id": 3, "method": "shutdown"}).encode(),
              json.dumps({"jsonrpc": 2, "id": 4, "method": "shutdown"}).encode(),
              json.dumps({"jsonrpc": "2.0", "id": 5, "method": 5, "params": {}}).encode(),
              json.dumps({"jsonrpc": "2.0", "id": 6, "method": None}).encode()]
    answers, log = _session(tmp_path, *bodies)
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in answers
            if "error" in a] == [
        (3, -32600, 'invalid request: a message is a JSON object with `"jsonrpc": "2.0"`, not '
                    '"1.0"'),
        (4, -32600, 'invalid request: a message is a JSON object with `"jsonrpc": "2.0"`, not '
                    '2'),
        (5, -32600, "invalid request: a method is a string, not a number"),
        (6, -32600, "invalid request: a method is a string, not null")]
    assert [a["id"] for a in answers if "result" in a] == [1, 99]
    assert "Traceback" not in log, log


def test_a_request_after_shutdown_is_invalid_request(tmp_path):
    """LSP: a request after `shutdown` is answered InvalidRequest. pygls dropped it ("No more
    requests!" in the log), and the client waited for its answer for good; `exit` still ends
    the server."""
    hover = {"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": (tmp_path / "a.astral").as_uri()},
        "position": {"line": 0, "character": 0}}}
    answers, log = _session(tmp_path, json.dumps({"jsonrpc": "2.0", "id": 10,
                                                  "method": "shutdown"}).encode(),
                            json.dumps(hover).encode())
    assert [(a["id"], a.get("error", {}).get("message")) for a in answers] == [
        (1, None), (10, None),
        (11, "textDocument/hover: the server is shut down: send `exit`"),
        (99, "shutdown: the server is shut down: send `exit`")]
    assert all(a["error"]["code"] == -32600 for a in answers[2:])
    assert "Traceback" not in log, log


def test_a_request_before_initialize_is_server_not_initialized(tmp_path):
    """A hover before `initialize` was an InternalError naming pygls's RuntimeError ("The
    workspace is not available"), with a traceback in the log; LSP answers it
    ServerNotInitialized (-32002), and drops a notification."""
    hover = {"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": (tmp_path / "a.astral").as_uri()},
        "position": {"line": 0, "character": 0}}}
    opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": (tmp_path / "a.astral").as_uri(), "languageId": "astral", "version": 1,
        "text": "site S {}\n"}}}
    answers, log = _session(tmp_path, json.dumps(opened).encode(), json.dumps(hover).encode(),
                            initialize=False)
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in answers] == [
        (5, -32002, "textDocument/hover: the server is not initialized: send `initialize` "
                    "first"),
        (99, -32002, "shutdown: the server is not initialized: send `initialize` first")]
    assert "Traceback" not in log and "textDocument/didOpen before `initialize`, dropped" in log
