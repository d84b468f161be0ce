"""Diagnostics for people, in the style of rustc and Elm: a header, the source line, a caret
underline, notes and a hint, then each related span (the stdlib's line of a template the user's
line brings in) as rustc's labelled note, with its own snippet."""
from __future__ import annotations

import textwrap
import unicodedata
from typing import Callable, Optional

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.outputs.terminal import printable

_COLOURS = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m",
            Severity.INFO: "\x1b[1;36m"}
_BOLD, _BLUE, _RESET = "\x1b[1m", "\x1b[1;34m", "\x1b[0m"


def render(d: Diagnostic, line_of: Callable[[str, int], Optional[str]], colour: bool = False) -> str:
    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    # everything from the design (messages quote its strings) is printed with its control
    # characters escaped: see outputs/terminal.py
    out = [f"{c(_COLOURS[d.severity], f'{d.severity.value}[{d.code}]')}: "
           f"{c(_BOLD, printable(d.message))}"]
    span = d.span
    gutter = max([len(str(s.end.line)) for s in [span] + [r.span for r in d.related[:MAX_RELATED]]
                  if s is not None] or [1])
    if span is None:
        if d.filename:
            out.append(f"  {c(_BLUE, '-->')} {printable(d.filename)}")
    else:
        out.extend(_snippet(span, line_of, gutter, lambda text: c(_BLUE, text),
                            lambda text: c(_COLOURS[d.severity], text)))
    lead = " " * gutter
    for note in d.notes:
        out.append(f"{lead} {c(_BLUE, '=')} note: {printable(note)}")
    if d.hint:
        out.append(f"{lead} {c(_BLUE, '=')} hint: {printable(d.hint)}")
    # a related span (the stdlib's line of a template the user's line brings in) as rustc's
    # labelled note: its message, then its own snippet; the first MAX_RELATED of them
    for r in d.related[:MAX_RELATED]:
        out.append(f"{c(_BOLD, 'note')}: {printable(r.message)}")
        out.extend(_snippet(r.span, line_of, gutter, lambda text: c(_BLUE, text),
                            lambda text: c(_BLUE, text)))
    if len(d.related) > MAX_RELATED:
        more = len(d.related) - MAX_RELATED
        out.append(f"{c(_BOLD, 'note')}: and {more:,} more related place{'s' * (more > 1)}, "
                   f"not shown (`--format json` lists every one)")
    return "\n".join(out)


MAX_SHOWN = 120
# related spans shown with their snippets: a scenario that breaks 2,000 constraints has a
# related span each (E680), 12,000 lines of snippets under its 2,000 notes
MAX_RELATED = 10


def _snippet(span, line_of, gutter: int, blue, marked) -> list:
    """`--> file:line:column`, the span's first line and its caret underline (none of the
    source when the line cannot be read)."""
    pad = " " * gutter
    out = [f"{pad}{blue('-->')} {printable(span.file)}:{span.start.line}:{span.start.column}"]
    text = line_of(span.file, span.start.line)
    if text is None and span.start.line > 1 and line_of(span.file, span.start.line - 1) \
            is not None:
        text = ""          # the end of a file that ends with a newline
    if text is None:
        return out
    text = text.replace("\t", " ")
    start = span.start.column - 1
    if span.end.line == span.start.line:
        width = max(1, span.end.column - span.start.column)
    else:
        width = max(1, len(text) - start)
    text, start, width = _window(text, start, width)
    out.append(f"{pad} {blue('|')}")
    out.append(f"{blue(str(span.start.line).rjust(gutter))} {blue('|')} {text}")
    out.append(f"{pad} {blue('|')} {marked(' ' * start + '^' * width)}")
    return out


def _window(text: str, start: int, width: int):
    """The shown line, control characters escaped (see _escaped), cut to a window of MAX_SHOWN
    characters around the span when longer, marked with `...` where it was cut. Escaped, then
    cut: a UTF-16 line read as UTF-8 (a `\x00` every other character) was cut to 120
    characters, then printed 300 and more once escaped."""
    if len(text) <= MAX_SHOWN and len(printable(text)) <= MAX_SHOWN:
        return _escaped(text, start, width)
    end = min(start, len(text))
    lo = max(0, end - 30)
    # each character shows as one or more: no more of the line than this can be in the window
    pieces = [printable(ch) for ch in text[lo:end + MAX_SHOWN]]
    at = end - lo
    while at and sum(map(len, pieces[:at])) > 30:        # at most 30 shown before the span
        pieces, at, lo = pieces[1:], at - 1, lo + 1
    head = "".join(pieces[:at]) + " " * (start - end)
    marked = _fitting(pieces[at:at + max(1, width)], MAX_SHOWN - 40)
    tail = _fitting(pieces[at + len(marked):], MAX_SHOWN - len(head) - len("".join(marked)), 0)
    head = ("..." if lo else "") + head
    cut = lo + at + len(marked) + len(tail) < len(text)
    marked, tail = "".join(marked), "".join(tail) + ("..." if cut else "")
    return head + marked + tail, _columns(head), max(1, _columns(marked))


def _fitting(pieces, room: int, least: int = 1) -> list:
    """The first of `pieces` that fit in `room` characters (at least `least`)."""
    n = 0
    for piece in pieces:
        room -= len(piece)
        if room < 0:
            break
        n += 1
    return pieces[:max(least, n)]


def _escaped(text: str, start: int, width: int):
    """The shown line with control characters escaped, and the caret moved to match (in the
    columns a terminal gives the text: see _columns)."""
    head = printable(text[:start])
    marked = printable(text[start:start + width])
    return (head + marked + printable(text[start + width:]), _columns(head),
            max(1, _columns(marked)))


def _columns(text: str) -> int:
    """The columns `text` takes on a terminal: two for a wide character (CJK, most emoji:
    Unicode's East Asian Width W or F), none for a combining mark, one for the others."""
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def accepted_lines(accepted, width: Optional[int] = None) -> list:
    """The accepted warnings, apart from the reported ones: one line each, where it points and
    what accepted it with the reason (model/allows.py Accepted); each wrapped to `width`
    columns when given (`astral size` follows the terminal's)."""
    if not accepted:
        return []
    out = [f"accepted: {len(accepted)} warning(s)"]
    for a in accepted:
        d = a.diagnostic
        at = f"{d.span.file}:{d.span.start.line}:{d.span.start.column}" if d.span is not None \
            else (d.filename or "")
        by = (f"allow at {a.by.file}:{a.by.start.line}" if a.by is not None
              else f"baseline {a.baseline}")
        for line, indent in ((f"  {d.code} {at}: {d.message}", "      "),
                             (f"    accepted by {by}: {a.reason}", "      ")):
            line = printable(line)
            out.extend(textwrap.wrap(line, width, subsequent_indent=indent) if width else [line])
    return out
