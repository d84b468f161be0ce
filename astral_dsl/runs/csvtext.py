"""How a runs table's text is cut into records (each bounded before Python's csv module reads
it) and where a problem in it is: the line and column of a diagnostic, a cell's columns.
table.py reads the table with these."""
from __future__ import annotations

from typing import List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.line_ends import lines_kept


def err(code: str, message: str, file: str, line: int, column: int = 1, end: int = 2,
         hint: Optional[str] = None) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, Span.at(file, line, column, line, end), hint)


def unclosed(first: str, file: str, start: int, end: int) -> Diagnostic:
    """E766 for a row whose record runs from line `start` (`first`) to `end`: a quote opened on
    its first line and not closed there took the lines after it into one cell (Python's csv
    reads such a cell to the next quote, however far)."""
    opened, column = False, 1
    for k, ch in enumerate(first):
        if ch == '"':
            opened = not opened
            if opened:
                column = k + 1
    return err("E766", f"a quote opened on line {start} is not closed on it: lines {start}-{end}"
                f" were read as one row", file, start, column, column + 1,
                "a runs table keeps each row on its line: close the quote (a quote inside a "
                "quoted cell is doubled: \"\") or remove it")


# the characters of one record (the header, or a row, with the lines a quote left open takes
# into it), checked line by line before csv parses it: csv keeps every cell of a record as a
# string in a list, about 160 bytes a cell, so a 16 MiB line of `1,1,...` took 1.3 GiB (5 GiB at
# the 64 MiB cap). A row of the shipped tables is at most 1,006 characters; 1 MiB holds eight
# cells at csv's field limit, and its worst (524,288 empty cells) costs csv about 80 MB
MAX_RECORD = 1 << 20



class RecordTooLong(Exception):
    """A record past MAX_RECORD characters (Lines): too_long says it."""


class Lines:
    """The text's lines for csv.reader, refusing a record past MAX_RECORD characters before
    csv reads its cells (`next_record()` between records)."""

    def __init__(self, text: str):
        # the lines as io.StringIO(text, newline="") gives them, line ends kept, without its
        # copy of the text (4 bytes a character: 256 MB at the 64 MiB cap)
        self._lines = lines_kept(text)
        self.used = 0
        self.first = ""               # the first line of the record being read
        self.taken = 0                # its lines so far

    def next_record(self) -> None:
        self.used, self.taken = 0, 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        if self.taken == 0:
            self.first = line
        self.taken += 1
        self.used += len(line)
        if self.used > MAX_RECORD:
            raise RecordTooLong()
        return line


def too_long(lines: Lines, file: str, start: int, what: str, columns: int) -> Diagnostic:
    """E766 for a record past MAX_RECORD characters from line `start`: at the character past
    the bound on a line that long, else (a quote left open) where the quote opens."""
    if lines.taken > 1:
        return unclosed(lines.first, file, start, start + lines.taken - 1)
    return err("E766", f"the runs table's {what} on line {start} is over {MAX_RECORD:,} "
                f"characters (its line end counted)", file, start, MAX_RECORD + 1,
                MAX_RECORD + 2,
                "a runs table's row is a few hundred characters, one cell per column of "
                f"docs/runs.md ({columns}): check the separators, or that the file is a runs "
                "table")


def cell_columns(line: str) -> List[Tuple[int, int]]:
    """The 1-based [start, end) columns of each CSV cell of one line, quotes included."""
    out, start, quoted = [], 0, False
    for k, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            out.append((start + 1, k + 1))
            start = k + 1
    out.append((start + 1, len(line) + 1))
    return out


def at(data: bytes, offset: int) -> Tuple[int, int]:
    """(line, column) of a byte offset, 1-based; the column counts the line's bytes up to it
    (the line is not valid text there)."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


