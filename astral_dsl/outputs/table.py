"""Tables for a terminal that never cut a value short (`astral sweep`, `astral search`).

A column is as wide as its widest cell. When every column fits the width with its header on one
line, that is the table. Otherwise headers wrap at their spaces and the columns are stacked: the
key columns (a sweep's parameters, a search's rank and layout) begin every part, and the other
columns follow in order over as many parts as it takes. A cell wider than the whole width
widens its part instead of being cut (the terminal wraps the line; nothing is lost)."""
from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

import attrs

GAP = "  "
STYLES = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m", "bold": "\x1b[1m"}
RESET = "\x1b[0m"
DEFAULT_WIDTH = 100


@attrs.frozen
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


def _len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


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
