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
