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


# ---- DOT quoting in linear time ----------------------------------------------------------------
# graphviz.quoting.quote finds the quotes to escape with a regex that tries every backslash of
# a run for a pair, a backslash and a quote: quadratic in a run of backslashes with no quote
# after it (16,000 of them, one tooltip of 4,000 from a design, took about 3 s of CPU, and a
# picture quotes a problem's tooltip on every node it marks). `Dot` is graphviz's Digraph with
# graphviz's own quote and attribute lists, its two regexes replaced by these scans: the same
# DOT text, byte for byte (tests/test_render_quoting.py).

def _trailing_backslashes(text: str) -> int:
    return len(text) - len(text.rstrip("\\"))


def _escape_unescaped_quotes(text: str) -> str:
    """graphviz.quoting.ESCAPE_UNESCAPED_QUOTES by one pass: a `"` after an even number of
    backslashes gets one (`\\"`); after an odd number it is escaped already."""
    parts = text.split('"')
    out = []
    for part in parts[:-1]:
        out += [part, '"' if _trailing_backslashes(part) % 2 else '\\"']
    out.append(parts[-1])
    return "".join(out)


def _ends_in_odd_backslashes(text: str) -> bool:
    """graphviz.quoting.FINAL_ODD_BACKSLASHES.search by one scan: an odd number of backslashes
    at the end, or (its `$`) before a final line break."""
    return bool(_trailing_backslashes(text) % 2 or
                text.endswith("\n") and _trailing_backslashes(text[:-1]) % 2)


def quote(identifier: str) -> str:
    """graphviz.quoting.quote (a DOT identifier, quoted when it must be; its warning of a string
    ending in an odd number of backslashes), in time linear in the text."""
    return graphviz.quoting.quote(identifier, escape_unescaped_quotes=_escape_unescaped_quotes,
                                  endswith_odd_number_of_backslashes=_ends_in_odd_backslashes)


def _items(mapping):
    """graphviz's order of attributes: a plain dict's sorted, another mapping's as it is."""
    return iter(sorted(mapping.items())) if type(mapping) is dict else iter(mapping.items())


def a_list(label=None, kwargs=None, attributes=None) -> str:
    """graphviz.quoting.a_list, quoted by `quote`."""
    result = [f"label={quote(label)}"] if label is not None else []
    if kwargs:
        result += [f"{quote(k)}={quote(v)}" for k, v in _items(kwargs) if v is not None]
    if attributes:
        pairs = _items(attributes) if hasattr(attributes, "items") else attributes
        result += [f"{quote(k)}={quote(v)}" for k, v in pairs if v is not None]
    return " ".join(result)


def attr_list(label=None, kwargs=None, attributes=None) -> str:
    """graphviz.quoting.attr_list, quoted by `quote`."""
    content = a_list(label, kwargs=kwargs, attributes=attributes)
    return f" [{content}]" if content else ""


def quote_edge(identifier: str) -> str:
    """graphviz.quoting.quote_edge (`node:port:compass`), quoted by `quote`."""
    node, _, rest = identifier.partition(":")
    parts = [quote(node)]
    if rest:
        port, _, compass = rest.partition(":")
        parts.append(quote(port))
        if compass:
            parts.append(compass)
    return ":".join(parts)


class Dot(graphviz.Digraph):
    """A graphviz.Digraph whose names and attributes are quoted in linear time (its subgraphs
    are Dots too): every picture's graph (style.Canvas)."""

    _quote = staticmethod(quote)
    _quote_edge = staticmethod(quote_edge)
    _a_list = staticmethod(a_list)
    _attr_list = staticmethod(attr_list)


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


__all__ = ["Dot", "LABEL_CHARS", "Line", "cut_texts", "dot_label", "dot_tooltip", "esc", "fit",
           "label", "short", "table"]
