"""Source files: bytes -> text, with diagnostics for binary and non-UTF-8 input."""
from __future__ import annotations

import functools
from typing import List

from astral_dsl import records

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span


@records.frozen(slots=False)
class Source:
    name: str      # the file name shown in diagnostics
    text: str

    def line(self, n: int) -> str:
        """Line n (1-based); lines end at \n only, as positions count them."""
        lines = self._lines
        return lines[n - 1].rstrip("\r") if 0 < n <= len(lines) else ""

    @functools.cached_property
    def _lines(self) -> List[str]:
        """The text split once (the checks' messages quote a line each: splitting a 1 MB text
        per quote took about a second of the check of a 1 MB design)."""
        return self.text.split("\n")

    def __getstate__(self):
        return {"name": self.name, "text": self.text}       # not the lines: made again


def encode(text: str) -> bytes:
    """Source text given as a string (the Python API, an editor) as bytes for `decode`: a lone
    surrogate, which no UTF-8 text can hold, is kept as its bytes so that `decode` reports it
    with its position instead of the encoder raising."""
    return text.encode("utf-8", "surrogatepass")


def decode(name: str, data: bytes) -> Source:
    """Decode UTF-8 (a leading BOM is dropped); raise DiagnosticError for binary or bad bytes."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DiagnosticError(Diagnostic(
            "E101", Severity.ERROR, "this file is UTF-16 text, not UTF-8", Span.at(name, 1, 1),
            "save the file as UTF-8"))
    if b"\x00" in data:
        offset = data.index(b"\x00")
        line, col = _position(data, offset)
        raise DiagnosticError(Diagnostic(
            "E102", Severity.ERROR, "this file is binary (it contains NUL bytes), not .astral text",
            Span.at(name, line, col), "pass a .astral source file"))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        surrogate = data[exc.start:exc.start + 3]
        if len(surrogate) == 3 and surrogate[0] == 0xED and 0xA0 <= surrogate[1] <= 0xBF:
            point = surrogate.decode("utf-8", "surrogatepass")
            message = (f"the text holds a lone surrogate (U+{ord(point):04X}), which is not a "
                       f"character")
        else:
            message = (f"this file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset "
                       f"{exc.start})")
        raise DiagnosticError(Diagnostic(
            "E101", Severity.ERROR, message, Span.at(name, line, col),
            "save the file as UTF-8")) from None
    source = Source(name, text)
    lone_carriage_return(source)
    return source


def lone_carriage_return(source: Source) -> None:
    """E104 at a carriage return not followed by a line feed (old Mac line endings, a stray
    `\\r`): editors, and the language server's protocol, end a line there, while .astral lines
    end at `\\n` only, so `// note\\rlet b = 2` would silently be one comment."""
    text = source.text
    at = text.find("\r")
    while at != -1 and text.startswith("\r\n", at):
        at = text.find("\r", at + 2)
    if at == -1:
        return
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    raise DiagnosticError(Diagnostic(
        "E104", Severity.ERROR, "a carriage return (U+000D) that is not followed by a line feed",
        Span.at(source.name, line, column),
        "editors break the line here but .astral lines end at a line feed: save the file with "
        "LF (or CRLF) line endings"))


def _position(data: bytes, offset: int) -> tuple[int, int]:
    head = data[:offset]
    line = head.count(b"\n") + 1
    last = head.rfind(b"\n")
    col_bytes = head[last + 1:]
    col = len(col_bytes.decode("utf-8", errors="replace")) + 1
    if data.startswith(b"\xef\xbb\xbf") and line == 1:
        col -= 1
    return line, col
