"""The text of a picture: user and computed text escaped for DOT (the one place it is), and
the HTML-like labels of nodes and clusters (lines and tables) with their lines cut to
LABEL_CHARS; style.py holds the colours and the canvas that uses them."""
from __future__ import annotations

import html
from typing import List, Optional, Sequence, Tuple

import graphviz

from astral_dsl.outputs.terminal import printable

# ---- user text in DOT: the one place it is escaped --------------------------------------------
# Text from a design (names, messages, notes, strings) reaches a picture in two ways, and each
# has its own escaping, applied here and nowhere else:
# - in HTML-like labels (every node and cluster label, the legend): `esc` escapes the markup
#   characters, and doubles backslashes, because Graphviz reads `\N`, `\G`, `\l` in HTML
#   labels too (even when written `&#92;N`);
# - in plain attributes: `dot_label` (edge labels) doubles backslashes and `dot_tooltip`
#   quadruples them, because Graphviz expands escStrings (`\N`, `\G`, `\l`) in a label once and
#   in a tooltip twice (measured with dot 2.43); either way no escString is interpreted and a
#   trailing backslash cannot end the quoted string early. Both mark the text as not HTML, so
#   that `<...>` in it is not taken for a label, and write `&` as `&amp;`: Graphviz reads
#   entities in every string (`&#xD800;` became bytes that are not UTF-8, `&#1;` a control
#   character, either one an SVG no XML reader opens; `&lt;` showed as `<`).
# Control characters, which are not allowed in the SVG (XML) Graphviz writes, are shown escaped
# (outputs/terminal.py); line breaks in tooltips stay line breaks.

def esc(text) -> str:
    """User or computed text inside an HTML-like label."""
    return html.escape(printable(str(text)), quote=True).replace("\\", "\\\\")


# Graphviz's lexer refuses a quoted string past 16,384 bytes ("syntax error ... longer than
# 16384?"): a plain attribute is cut to about this many bytes of UTF-8, as graphviz quotes it (`"`
# escaped), with `…` (a tooltip of a part of a design whose name was 20,000 characters long was
# E000)
MAX_QUOTED = 16_000


def _plain(text, backslash: str) -> str:
    out, used = [], 0
    for line in str(text).split("\n"):
        gap = 2 * bool(out)                                         # (the \n before it)
        escaped, size = _escaped(printable(line), backslash, MAX_QUOTED - used - gap)
        out.append(escaped)
        if size is None:
            break
        used += size + gap
    return graphviz.nohtml("\\n".join(out))


def _escaped(line: str, backslash: str, room: int) -> Tuple[str, Optional[int]]:
    """(`line` escaped for a plain attribute, `\\` as `backslash` and `&` as `&amp;`, its bytes
    as graphviz quotes it: UTF-8, a `"` escaped) when they fit in `room`, else (the escaped
    line cut to `room` bytes with its `…`, None)."""
    table = {ord("\\"): backslash, ord("&"): "&amp;"}
    escaped = line.translate(table)
    size = len(escaped.encode("utf-8")) + escaped.count('"')
    if size <= room:
        return escaped, size
    kept, room = [], room - len("…".encode("utf-8"))
    for ch in line:
        part = ch.translate(table)
        room -= len(part.encode("utf-8")) + (ch == '"')
        if room < 0:
            break
        kept.append(part)
    return "".join(kept) + "…", None


def dot_label(text) -> str:
    """User or computed text for a plain DOT label (an edge's)."""
    return _plain(text, "\\\\")


def dot_tooltip(text) -> str:
    """User or computed text for a tooltip; its line breaks stay line breaks."""
    return _plain(text, "\\" * 4)


def _font(colour: str, body: str, size: str = "") -> str:
    """A FONT element; Graphviz refuses an empty one (a host with NICs and no GPUs had one)."""
    return f'<FONT COLOR="{colour}"{size}>{body or " "}</FONT>'


LABEL_CHARS = 96          # a line of a node's or cluster's label; longer is cut, in full in
#                           the tooltip (a 200-character template name widened the whole view)


def short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def fit(text) -> str:
    """A label line's text: as it is up to LABEL_CHARS characters, else shortened."""
    return text if len(str(text)) <= LABEL_CHARS else short(text)


def cut_texts(lines, table_rows) -> List[str]:
    """The texts of a label's lines or table cells that LABEL_CHARS cuts, in full."""
    cells = [c[0] if isinstance(c, tuple) else c for r in (table_rows or ()) for c in r]
    texts = [c.text if isinstance(c, Line) else c for c in list(lines or ()) + cells]
    return [str(t) for t in texts if t is not None and len(str(t)) > LABEL_CHARS]


class Line:
    """One line of a node's label: text (escaped here) with an optional style."""

    def __init__(self, text, bold=False, small=False, italic=False, colour=None):
        self.text, self.bold, self.small, self.italic, self.colour = \
            text, bold, small, italic, colour

    def html(self, default_colour: str) -> str:
        t = esc(fit(self.text)) or " "
        if self.bold:
            t = f"<B>{t}</B>"
        if self.italic:
            t = f"<I>{t}</I>"
        size = ' POINT-SIZE="9"' if self.small else ""
        return _font(self.colour or default_colour, t, size)


def label(lines: Sequence, colour: str) -> str:
    """An HTML-like label from lines (str or Line): the first is bold."""
    out = []
    for i, line in enumerate(lines):
        if line is None:
            continue
        if not isinstance(line, Line):
            line = Line(line, bold=(i == 0))
        out.append(line.html(colour))
    return "<" + '<BR ALIGN="CENTER"/>'.join(out) + ">"


def table(rows: List[List], colour: str, *, header: Optional[str] = None,
          padding: int = 2) -> str:
    """An HTML-like table label. rows: lists of cells: str, Line, or (text, attrs) where attrs
    may hold `colour`, `align`, `bgcolor`, `port` ... (HTML-like cell attributes)."""
    width = max((len(r) for r in rows), default=1)
    out = [f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="{padding}">']
    if header:
        out.append(f'<TR><TD COLSPAN="{width}" ALIGN="CENTER"><FONT COLOR="{colour}">'
                   f'<B>{esc(header)}</B></FONT></TD></TR>')
    for r in rows:
        out.append("<TR>")
        for j, cell in enumerate(r):
            attrs = {}
            if isinstance(cell, tuple):
                cell, attrs = cell[0], dict(cell[1])
            col = attrs.pop("colour", colour)
            align = attrs.pop("align", "LEFT")
            text = cell.html(col) if isinstance(cell, Line) else _font(col, esc(fit(cell)))
            if j == len(r) - 1 and len(r) < width:
                attrs["colspan"] = width - len(r) + 1
            extra = "".join(f' {k.upper()}="{v}"' for k, v in attrs.items())
            out.append(f'<TD ALIGN="{align}"{extra}>{text}</TD>')
        out.append("</TR>")
    out.append("</TABLE>")
    return "<" + "".join(out) + ">"


__all__ = ["LABEL_CHARS", "Line", "cut_texts", "dot_label", "dot_tooltip", "esc", "fit",
           "label", "short", "table"]
