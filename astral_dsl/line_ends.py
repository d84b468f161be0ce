"""Where a line ends in the text files astral reads besides its source (a runs table, a rank
log) and in an editor's document (the language server): at `\n`, `\r\n` and a lone `\r` (a
classic Mac's or a converted file's), as Python's csv module and the Language Server Protocol
end them; never at str.splitlines' others (`\x0b`, `\x0c`, `\x1c`-`\x1e`, U+0085, U+2028,
U+2029), which a cell or a JSON string may hold raw (a rank log's line cut there was two
unreadable rows, E784, instead of one row) and an editor shows within its line."""
from __future__ import annotations

import re
from typing import Iterator, List

# a line end
LINE_END = re.compile(r"\r\n?|\n")
# a line with its end (the last line may have none), as io.StringIO(text, newline="") reads it
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


def lines_of(text: str, most: int = 0) -> List[str]:
    """The lines of `text` without their ends (the first `most` + 1 at most, the last holding
    the rest, when `most` is given); a text ending in a line end has an empty last line."""
    return LINE_END.split(text, most)


def lines_kept(text: str) -> Iterator[str]:
    """The lines of `text` with their ends, one at a time (without a copy of the text)."""
    return (m.group() for m in _LINE.finditer(text))
