"""Tables for a terminal that never cut a value short, in two layouts, and the little text
handling they need (cell widths, bold, folding long lines): the project's own renderer, rich's
tables fold or cut a cell to fit, which these must not do.

- `render` (`astral sweep`, `astral search`): a column is as wide as its widest cell. When every
  column fits the width with its header on one line, that is the table. Otherwise headers wrap
  at their spaces and the columns are stacked: the key columns (a sweep's parameters, a
  search's rank and layout) begin every part, and the other columns follow in order over as
  many parts as it takes. A cell wider than the whole width widens its part instead of being
  cut (the terminal wraps the line; nothing is lost).
- `print_table` (`astral size`): a `Table` is printed with its fields side by side when its
  natural width fits, and otherwise stacked, one block per row (`field: value` lines under the
  row's name), so that nothing is cut, wrapped inside a cell or printed wider than the
  terminal.

Widths are counted in terminal cells (`cell_width`: Unicode's East Asian Width, UAX #11)."""
from __future__ import annotations

import os
import textwrap
import unicodedata
from typing import Callable, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records

GAP = "  "
STYLES = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m", "bold": "\x1b[1m"}
RESET = "\x1b[0m"
DEFAULT_WIDTH = 100


@records.frozen
class Column:
    label: str
    cells: Tuple[str, ...]
    right: bool = True                  # numbers right-aligned, text left
    key: bool = False                   # repeated at the start of every stacked part
    styles: Tuple[str, ...] = ()        # per cell: a key of STYLES, or ""


def terminal_width(stream=None) -> int:
    """$COLUMNS when set, else the terminal's width when `stream` is one, else 100."""
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    if stream is not None and hasattr(stream, "isatty") and stream.isatty():
        try:
            return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
        except (OSError, ValueError):
            pass
    return DEFAULT_WIDTH


def cell_width(text: str) -> int:
    """The terminal cells `text` takes: 2 for a wide or fullwidth character (East Asian Width W
    or F, UAX #11), 0 for a combining mark or a format character, else 1."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


_len = cell_width


def _longest_word(label: str) -> int:
    return max((_len(w) for w in label.split()), default=0)


def _cells_width(col: Column) -> int:
    return max((_len(c) for c in col.cells), default=0)


def _wrap(label: str, width: int) -> List[str]:
    lines: List[str] = []
    for word in label.split():
        if lines and _len(lines[-1]) + 1 + _len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + len(GAP) * max(0, len(widths) - 1)


def parts(columns: Sequence[Column], width: int) -> List[Tuple[List[Column], List[int]]]:
    """The stacked parts: (columns, their widths) each, key columns first in every part."""
    wide = [max(_cells_width(c), _len(c.label)) for c in columns]
    if _total(wide) <= width:
        return [(list(columns), wide)]
    narrow = {id(c): max(_cells_width(c), _longest_word(c.label)) for c in columns}
    keys = [c for c in columns if c.key]
    rest = [c for c in columns if not c.key]
    out: List[Tuple[List[Column], List[int]]] = []
    current = list(keys)
    for col in rest:
        trial = current + [col]
        if len(current) > len(keys) and _total([narrow[id(c)] for c in trial]) > width:
            out.append((current, [narrow[id(c)] for c in current]))
            current = list(keys) + [col]
        else:
            current = trial
    if len(current) > len(keys) or not out:
        out.append((current, [narrow[id(c)] for c in current]))
    return out


def _cell(text: str, w: int, right: bool, style: str, colour: bool) -> str:
    pad = " " * max(0, w - _len(text))
    body = text if not (colour and style in STYLES) else f"{STYLES[style]}{text}{RESET}"
    return pad + body if right else body + pad


def render(columns: Sequence[Column], width: Optional[int] = None, colour: bool = False,
           title: Optional[str] = None) -> str:
    width = width or DEFAULT_WIDTH
    rows = max((len(c.cells) for c in columns), default=0)
    lines: List[str] = []
    if title:
        lines.append(title)
    stacked = parts(columns, width)
    for k, (cols, widths) in enumerate(stacked):
        if k or title:
            lines.append("")
        heads = [_wrap(c.label, w) if _len(c.label) > w else [c.label]
                 for c, w in zip(cols, widths)]
        depth = max(len(h) for h in heads)
        for i in range(depth):
            row = []
            for c, w, h in zip(cols, widths, heads):
                text = h[i - (depth - len(h))] if i >= depth - len(h) else ""
                row.append(_cell(text, w, c.right, "bold", colour))
            lines.append(GAP.join(row).rstrip())
        lines.append("─" * _total(widths))
        for r in range(rows):
            row = []
            for c, w in zip(cols, widths):
                text = c.cells[r] if r < len(c.cells) else ""
                style = c.styles[r] if r < len(c.styles) else ""
                row.append(_cell(text, w, c.right, style, colour))
            lines.append(GAP.join(row).rstrip())
    return "\n".join(lines) + "\n"


# ---- `astral size`: a table of fields, side by side or one block per row ---------------------
@records.frozen
class Field:
    name: str
    left: bool = False          # text fields align left, numbers right


@records.frozen
class Table:
    title: str
    fields: Sequence[Field]
    rows: List[List[str]] = attrs.field(factory=list)
    footer: List[List[str]] = attrs.field(factory=list)   # totals, set apart from the rows
    lines: List[str] = attrs.field(factory=list)    # notes printed under the table

    def add(self, *cells: str) -> None:
        self.rows.append([str(c) for c in cells])

    def total(self, *cells: str) -> None:
        self.footer.append([str(c) for c in cells])


EDGE = 1    # a space at each edge


def bold(text: str, colour: bool) -> str:
    return f"{STYLES['bold']}{text}{RESET}" if colour and text else text


def fold(text: str, width: int, indent: str = "", subsequent: str = "") -> List[str]:
    """`text` wrapped at its spaces to `width` columns, a word longer than that broken."""
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=subsequent,
                         break_on_hyphens=False) or [""]


def print_table(out: Callable[[str], None], table: Table, width: int, colour: bool = False,
                shown: Callable[[str], str] = lambda s: s) -> None:
    """Write `table`'s lines through `out`, `width` columns wide. `shown` makes design text
    safe to print (terminal controls escaped)."""
    widths = _field_widths(table)
    if sum(widths) + len(GAP) * (len(widths) - 1) + 2 * EDGE > width:
        _stacked(out, table, width, colour, shown)
        return
    for line in fold(shown(table.title), width):
        out(bold(line, colour))
    out("")
    out(bold(shown(_line(table.fields, [c.name for c in table.fields], widths)), colour))
    out(" " + "─" * (sum(widths) + len(GAP) * (len(widths) - 1)))
    for row in table.rows:
        out(shown(_line(table.fields, row, widths)))
    if table.footer:
        out("")
        for row in table.footer:
            out(bold(shown(_line(table.fields, row, widths)), colour))
    out("")


def _field_widths(table: Table) -> List[int]:
    """Each field's widest cell (in terminal cells), its name included."""
    widths = [cell_width(c.name) for c in table.fields]
    for row in table.rows + table.footer:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_width(cell))
    return widths


def _line(fields, cells, widths) -> str:
    out = []
    for c, cell, w in zip(fields, cells, widths):
        pad = " " * (w - cell_width(cell))
        out.append(cell + pad if c.left else pad + cell)
    return (" " * EDGE + GAP.join(out)).rstrip()


def _stacked(out, table: Table, width: int, colour: bool, shown) -> None:
    """One block per row: the first cell as a heading, then `field: value` for the others
    that hold something."""
    for line in fold(shown(table.title), width):
        out(bold(line, colour))
    # a second text field (the instance after its level) joins the heading
    lead = 2 if len(table.fields) > 1 and table.fields[1].left else 1
    for row in table.rows + table.footer:
        head = " ".join(cell.strip() for cell in row[:lead] if cell.strip())
        for line in fold(shown(head) or "-", width, " ", " "):
            out(line)
        for c, cell in zip(table.fields[lead:], row[lead:]):
            if cell.strip() not in ("", "-"):
                for line in fold(f"{shown(c.name)}: {shown(cell)}", width, "  ", "  "):
                    out(line)
    out("")
