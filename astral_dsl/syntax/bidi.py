"""W101: a bidirectional control character in a comment or a string ("Trojan Source",
CVE-2021-42574). Such a character reorders how an editor or a terminal shows the rest of its
line, so a line can read other than it compiles (a comment seeming to close before code that
is in fact inside it). Outside comments and strings no token holds one (E104)."""
from __future__ import annotations

import re
import unicodedata
from typing import List

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.syntax.source import Source

# the embeddings and overrides LRE, RLE, PDF, LRO, RLO and the isolates LRI, RLI, FSI, PDI
BIDI = "\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[{BIDI}]")
# a comment or a string, as the lexer reads them (a block comment left open runs to the end)
_HOLDER = re.compile(r'(?P<c>//[^\n]*|/\*.*?(?:\*/|\Z))|"(?:[^"\\\n]|\\.)*"?', re.S)
MAX_SAID = 20


def bidi_warnings(source: Source) -> List[Diagnostic]:
    """W101 for each comment or string of `source` that holds a bidirectional control
    character, at its first one (at most MAX_SAID, the last counting the rest). A text of
    ASCII alone, or with no such character, is not scanned."""
    text = source.text
    if text.isascii() or _ANY.search(text) is None:
        return []
    found = []
    for m in _HOLDER.finditer(text):
        ch = _ANY.search(text, m.start(), m.end())
        if ch is not None:
            found.append((ch.start(), "a comment" if m.lastgroup == "c" else "a string"))
    out = []
    for offset, where in found[:MAX_SAID]:
        point = text[offset]
        more = len(found) - MAX_SAID if len(out) == MAX_SAID - 1 else 0
        line = text.count("\n", 0, offset) + 1
        column = offset - text.rfind("\n", 0, offset)
        out.append(Diagnostic(
            "W101", Severity.WARNING,
            f"{where} holds a bidirectional control character, U+{ord(point):04X} "
            f"({unicodedata.name(point)}): the line may read other than it compiles"
            + (f" (and {more} more comment(s) or string(s) hold one)" if more > 0 else ""),
            Span.at(source.name, line, column),
            "delete it: it reorders how editors and terminals show the rest of the line "
            "(\"Trojan Source\", CVE-2021-42574), and right-to-left words show in their order "
            "without it"))
    return out
