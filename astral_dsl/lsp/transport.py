"""The language server's standard input as pygls reads it, with bounds: a header line is read
MAX_HEADER bytes at a time (no line can fill the memory), and a message's Content-Length may
not exceed MAX_MESSAGE. pygls would allocate whatever a header announces (`Content-Length:
100000000000` tried to allocate 100 GB) and would stop on a length past Python's integer digit
limit; here such a message is read and thrown away in chunks of CHUNK bytes, so the stream
stays in step, and pygls is handed a notification in its place (TOO_LARGE), which the server
answers by telling the editor (window/logMessage) and its log. A length that is not a number
of at most 18 digits counts as past the limit, and the message runs to the end of the input.
A header line that a message's unread rest runs into (after a Content-Length that was short, not
a number, or spelt in another case) is found at the end of the line, so one bad message costs
itself, not every message after it.

Why MAX_MESSAGE is 64 MiB: a source file is at most 8 MiB (E108), and its text in a didOpen or
didChange message is JSON, where a control character takes 6 bytes (\\u0000); 64 MiB holds
any document the compiler could read, escaped, with room to spare."""
from __future__ import annotations

import json
import re
from typing import BinaryIO, Optional

MAX_MESSAGE = 64 * 1024 * 1024
MAX_HEADER = 8192
CHUNK = 1024 * 1024
TOO_LARGE = "astral/messageTooLarge"        # the notification pygls gets instead
_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")
# a Content-Length header as a client may spell it (the base protocol's headers are HTTP's:
# their names are read in any case, RFC 9110 section 5.1), and at the end of a line that holds
# what is left of a message before it: the body of a message whose Content-Length was short,
# missing or not a number, which has no line end of its own
_ANY_LENGTH = re.compile(rb"content-length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.IGNORECASE)


class BoundedInput:
    """`readline` and `read(n)` over the raw input, as pygls' StdinAsyncReader calls them."""

    def __init__(self, raw: BinaryIO, limit: int = MAX_MESSAGE):
        self.raw, self.limit = raw, limit
        self._skip: Optional[int] = None     # the announced length of a message to throw away
        self._pending = False
        self._note = b""

    def readline(self) -> bytes:
        line = self.raw.readline(MAX_HEADER)
        match = _LENGTH.fullmatch(line)
        if match is None:
            # pygls takes only `Content-Length: N\r\n` as a whole line: after one message
            # whose length was wrong or unread, every later body ran into the next header line,
            # and the server never read another message (as deaf as hung). What is before the
            # header is dropped, and the header handed on as pygls reads it
            spelt = _ANY_LENGTH.search(line)
            if spelt is None:
                return line
            line = b"Content-Length: %s\r\n" % spelt.group(1)
            match = _LENGTH.fullmatch(line)
        digits = match.group(1)
        length = int(digits) if len(digits) <= 18 else None
        if length is not None and length <= self.limit:
            return line
        self._skip, self._pending = length, True
        self._note = json.dumps({"jsonrpc": "2.0", "method": TOO_LARGE, "params": {
            "bytes": length if length is not None else digits.decode()[:40] + "...",
            "limit": self.limit}}).encode()
        return b"Content-Length: %d\r\n" % len(self._note)

    def read(self, n: int) -> bytes:
        if not self._pending:
            return self.raw.read(n)
        self._pending = False
        left = self._skip
        while left is None or left > 0:           # thrown away, CHUNK bytes at a time
            data = self.raw.read(CHUNK if left is None else min(CHUNK, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
        return self._note


def describe(params) -> str:
    """What the server says about a message it threw away (params of TOO_LARGE)."""
    size = getattr(params, "bytes", None)
    limit = getattr(params, "limit", MAX_MESSAGE)
    if size is None and isinstance(params, dict):
        size, limit = params.get("bytes"), params.get("limit", MAX_MESSAGE)
    return (f"astral lsp: a message of {size} bytes was skipped: the limit is {limit:,} bytes "
            "(a source file is at most 8 MiB)")


# pygls's two log points for a message it could not parse or structure (pygls 2.1: server.py's
# aio_readline, "Unable to handle message"; protocol/json_rpc.py's structure_message, "Unable to
# deserialize message"): reached only by what the client sent (not JSON, not UTF-8, not an
# object, a field of the wrong type), never by a handler of the server's, whose errors pygls
# logs apart ("Failed to handle ..."). Each wrote a Python traceback into the editor's log; the
# client's error is said in one line, and the server's own warning (documents.py,
# report_server_error) says what it did with it
CLIENT_ERRORS = {"pygls.server": "Unable to handle message",
                 "pygls.protocol.json_rpc": "Unable to deserialize message"}
# and the log point of a request answered with an error (json_rpc.py's _send_handler_result,
# 'Exception occurred for message "%s"'), where the error is the client's (a document it has
# not opened, params no handler takes, a request past its deadline: protocol.answered's
# InvalidParams and RequestFailed): a hover on a closed file wrote a traceback into the log. A
# bug (JsonRpcInternalError) keeps its traceback
ANSWERED = 'Exception occurred for message "%s"'


class OneLine:
    """A logging filter: a record of CLIENT_ERRORS, or of a request answered with the client's
    error (ANSWERED), without its traceback, the exception in one line in its place (the
    exception being handled where the record is made)."""

    def filter(self, record) -> bool:
        import sys

        exc = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        if CLIENT_ERRORS.get(record.name) == str(record.msg).split("\n", 1)[0]:
            record.msg, record.args = CLIENT_ERRORS[record.name] + ": %s", (said(exc)[:500],)
            record.exc_info = record.exc_text = None
        elif record.name == "pygls.protocol.json_rpc" and record.msg == ANSWERED and \
                _clients(exc):
            record.msg = 'Request "%s" answered with an error: %s'
            record.args = tuple(record.args or ("?",))[:1] + (said(exc)[:500],)
            record.exc_info = record.exc_text = None
        return True


def _clients(exc) -> bool:
    """Whether a handler's exception is an error of the client's (not the server's bug)."""
    from pygls.exceptions import JsonRpcException, JsonRpcInternalError

    return isinstance(exc, JsonRpcException) and not isinstance(exc, JsonRpcInternalError)


def said(exc) -> str:
    """An exception in one line: its type and message, and for a group (cattrs' structuring
    errors) its first leaf's, with the notes that say which field."""
    if exc is None:
        return "the message could not be read"
    leaf = exc
    while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
        leaf = leaf.exceptions[0]
    out = f"{type(exc).__name__}: {exc}"
    if leaf is not exc:
        notes = "; ".join(str(n) for n in getattr(leaf, "__notes__", ()))
        out += f" ({type(leaf).__name__}: {leaf}{'; ' + notes if notes else ''})"
    return out


def quiet_client_errors() -> None:
    """Install OneLine on pygls's loggers of a client's malformed messages."""
    import logging

    for name in CLIENT_ERRORS:
        logging.getLogger(name).addFilter(OneLine())
