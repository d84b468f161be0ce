"""`astral fmt`: the canonical layout of .astral files (see printer.py for the rules).

    >>> from astral_dsl.fmt import format_text
    >>> format_text("host   A{power=700W}")
    'host A { power = 700 W }\\n'

Formatting never changes meaning: the result is parsed again and its syntax tree compared with
the input's (positions and the spelling of whitespace aside), and its comments with the input's;
a difference is an internal error (FormatError), never a silently changed file."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.fmt.cst import Comment, concrete, normalise_newlines
from astral_dsl.fmt.printer import print_concrete
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse
from astral_dsl.syntax.source import Source


class FormatError(Exception):
    """The formatter would have changed the meaning or the comments of a file (a bug)."""


def format_text(text: str, name: str = "<string>", verify: bool = True) -> str:
    """The canonical layout of `text`. Raises DiagnosticError (the compiler's own syntax
    diagnostic) when `text` does not parse."""
    text = normalise_newlines(text)
    if text.startswith("\ufeff"):
        text = text[1:]
    source = Source(name, text)
    try:
        before = parse(source)             # the compiler's diagnostics for a syntax error
        cst = concrete(text)
        out = print_concrete(cst)
    except RecursionError:
        raise DiagnosticError(Diagnostic(
            "E402", Severity.ERROR, "expressions are nested too deeply to format",
            Span.at(name, 1, 1), "split the expression with `let` names")) from None
    if verify:
        _verify(name, before, cst.comments, out)
    return out


def _verify(name: str, before: ast.Module, comments: List[Comment], out: str) -> None:
    try:
        after = parse(Source(name, out))
        after_comments = concrete(out).comments
    except DiagnosticError as exc:
        raise FormatError(f"{name}: the formatted text does not parse: "
                          f"{exc.diagnostic.message}") from None
    if shape(before) != shape(after):
        raise FormatError(f"{name}: formatting would change the meaning")
    if [comment_text(c.text) for c in comments] != [comment_text(c.text)
                                                    for c in after_comments]:
        raise FormatError(f"{name}: formatting would change a comment")


def comment_text(text: str) -> str:
    """A comment as the formatter keeps it: exactly, but for whitespace at the ends of lines."""
    return "\n".join(line.rstrip() for line in text.split("\n"))


def shape(node):
    """A syntax tree without positions (and quantities without the spelling of their number
    and unit's spacing), for comparing meaning."""
    import attrs

    if isinstance(node, tuple):
        return tuple(shape(n) for n in node)
    if isinstance(node, Span):
        return None
    if attrs.has(type(node)):
        out = [type(node).__name__]
        for field in attrs.fields(type(node)):
            if field.name in ("span", "unit_span"):
                continue
            value = getattr(node, field.name)
            if isinstance(node, ast.QuantityLit) and field.name == "text":
                value = "".join(value.split())
            out.append((field.name, shape(value)))
        return tuple(out)
    return node


def is_formatted(text: str, name: str = "<string>") -> bool:
    return format_text(text, name) == text


__all__ = ["FormatError", "format_text", "is_formatted", "shape", "comment_text"]
