"""Positions: the compiler's spans (1-based lines, 1-based columns in code points, end exclusive)
and the LSP's (0-based lines, 0-based columns in UTF-16 code units by default, or UTF-8 bytes or
code points when the client negotiated them)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from lsprotocol import types as lsp

from astral_dsl.diagnostics import Span


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


class Lines:
    """The lines of one text, for converting columns."""

    def __init__(self, text: str, encoding: str = "utf-16"):
        self.lines: List[str] = [ln.rstrip("\r") for ln in text.split("\n")]
        self.encoding = str(getattr(encoding, "value", encoding) or "utf-16").lower()

    def line(self, n0: int) -> str:
        return self.lines[n0] if 0 <= n0 < len(self.lines) else ""

    def to_lsp(self, line1: int, column1: int) -> lsp.Position:
        """1-based line and code-point column -> LSP position."""
        n0 = max(line1 - 1, 0)
        text = self.line(n0)
        cp = max(column1 - 1, 0)
        units = sum(_units(ch, self.encoding) for ch in text[:cp]) + max(cp - len(text), 0)
        return lsp.Position(line=n0, character=units)

    def from_lsp(self, pos: lsp.Position) -> Tuple[int, int]:
        """LSP position -> 1-based line and code-point column."""
        text = self.line(pos.line)
        units = 0
        for i, ch in enumerate(text):
            if units >= pos.character:
                return pos.line + 1, i + 1
            units += _units(ch, self.encoding)
        return pos.line + 1, len(text) + 1

    def range(self, span: Optional[Span]) -> lsp.Range:
        if span is None:
            return lsp.Range(lsp.Position(line=0, character=0), lsp.Position(line=0, character=0))
        return lsp.Range(self.to_lsp(span.start.line, span.start.column),
                         self.to_lsp(span.end.line, span.end.column))

    def end(self) -> lsp.Position:
        last = len(self.lines) - 1
        return lsp.Position(line=last,
                            character=sum(_units(ch, self.encoding) for ch in self.lines[last]))
