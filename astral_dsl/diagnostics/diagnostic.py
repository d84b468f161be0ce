"""Spans and diagnostics.

Positions are 1-based lines and columns; columns count Unicode code points; the end is exclusive.
A diagnostic without a span (for example an unreadable file) still names its file.
"""
from __future__ import annotations

import enum
from typing import Iterable, Sequence

import attrs

from astral_dsl import records


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@records.frozen(order=True)
class Position:
    line: int
    column: int


@records.frozen
class Span:
    file: str
    start: Position
    end: Position

    @classmethod
    def at(cls, file: str, line: int, column: int, end_line: int | None = None,
           end_column: int | None = None) -> "Span":
        end_line = line if end_line is None else end_line
        end_column = column + 1 if end_column is None else end_column
        if cls is not Span:
            return cls(file, Position(line, column), Position(end_line, end_column))
        return span_at(file, line, column, end_line, end_column)

    def to(self, other: "Span") -> "Span":
        """The span from the start of this one to the end of `other` (same file)."""
        return Span(self.file, min(self.start, other.start), max(self.end, other.end))

    def __str__(self) -> str:
        return f"{self.file}:{self.start.line}:{self.start.column}"


def _fields(cls):
    """The setters of `cls`'s slots, in the order of its fields."""
    return tuple(cls.__dict__[f.name].__set__ for f in attrs.fields(cls))


_new = object.__new__
_set_line, _set_column = _fields(Position)
_set_file, _set_start, _set_end = _fields(Span)


def span_at(file: str, line: int, column: int, end_line: int, end_column: int) -> Span:
    """Span(file, Position(line, column), Position(end_line, end_column)), as attrs' __init__
    makes it but with the slots set directly: attrs' frozen __init__ sets each through
    object.__setattr__, 2.3 us a span against 1.5 here, and a 1 MB design's parse makes
    130,000 spans (its cached tree read back as many)."""
    start, end, span = _new(Position), _new(Position), _new(Span)
    _set_line(start, line)
    _set_column(start, column)
    _set_line(end, end_line)
    _set_column(end, end_column)
    _set_file(span, file)
    _set_start(span, start)
    _set_end(span, end)
    return span


@records.frozen
class Related:
    """A secondary place of a diagnostic, with what it is there: rustc's labelled note span, the
    LSP's DiagnosticRelatedInformation. A diagnostic that the user's use of a stdlib template
    causes stands on the user's line; its related span is the template's line in the stdlib."""
    span: Span
    message: str


# a message or hint longer than this is shown by its start and end (excerpt): a name of a
# million characters was echoed whole, twice (`unknown name` and its hint: 2 MB of output for
# an 1 MB line), and so was a hint that lists a design's thousands of names
MAX_TEXT = 2000


def _bounded(text):
    return excerpt(text, MAX_TEXT) if isinstance(text, str) and len(text) > MAX_TEXT else text


@records.frozen
class Diagnostic:
    code: str
    severity: Severity
    message: str = attrs.field(converter=_bounded)
    span: Span | None = None
    hint: str | None = attrs.field(default=None, converter=_bounded)
    file: str | None = None  # for diagnostics without a span
    notes: tuple[str, ...] = ()
    related: tuple[Related, ...] = ()

    @property
    def filename(self) -> str | None:
        return self.span.file if self.span is not None else self.file

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def moved_to(d: Diagnostic, at: Span | None, what: str) -> Diagnostic:
    """`d` standing at `at` (the user's line that brings in what `d` is about), its own span
    kept as a related one labelled `what` (the stdlib's line); `d` itself when `at` is None,
    it has no span, or `at` is in its span's file."""
    if at is None or d.span is None or at.file == d.span.file:
        return d
    return attrs.evolve(d, span=at, related=(Related(d.span, what),) + d.related)


def with_related(d: Diagnostic, span: Span | None, what: str) -> Diagnostic:
    """`d` with a related span labelled `what` (kept once)."""
    if span is None:
        return d
    extra = Related(span, what)
    return d if extra in d.related else attrs.evolve(d, related=d.related + (extra,))


def own_part(kind: str, base: str, field: str, name: str | None = None) -> str:
    """The declaration a hint gives for a part of the user's own based on a stdlib one that
    states `field` (`switch MySwitch51T = Switch51T { power = ... }`): the stdlib's part is not
    theirs to edit (W212, W216, W690)."""
    return f"{kind} {name or 'My' + base} = {base} {{ {field} = ... }}"


class DiagnosticError(Exception):
    """Raised inside a pass to abandon one construct; the pass records the diagnostic and goes on."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def _sort_key(d: Diagnostic):
    span = d.span
    if span is None:
        return (d.filename or "", 0, 0, d.code, d.message)
    return (span.file, span.start.line, span.start.column, d.code, d.message)


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Stable, deterministic order (file, position, code) without duplicates."""
    seen = set()
    out = []
    for d in sorted(diagnostics, key=_sort_key):
        if d in seen:
            continue
        seen.add(d)
        out.append(d)
    return tuple(out)


def excerpt(text: str, width: int = 40) -> str:
    """`text` for a message: whole when short, else its start and end around `...` (a 5 MB
    literal is not echoed back whole)."""
    if len(text) <= width:
        return text
    tail = width // 4
    return text[:width - tail - 3] + "..." + text[-tail:]


def did_you_mean(name: str, candidates: Sequence[str] | Iterable[str]) -> str | None:
    """A hint naming the closest candidate, or None when nothing is close."""
    import difflib

    pool = sorted(set(candidates))
    same_letters = [c for c in pool if c.lower() == name.lower() and c != name]
    matches = same_letters[:1] or difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return f"did you mean `{matches[0]}`?" if matches else None
