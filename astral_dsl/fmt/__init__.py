"""`astral fmt`: the canonical layout of .astral files (see printer.py for the rules).

    >>> from astral_dsl.fmt import format_text
    >>> format_text("host   A{power=700W}")
    'host A { power = 700 W }\\n'

Formatting never changes meaning: a result that differs from the input is parsed again and
its syntax tree compared with the input's (positions and the spelling of whitespace aside, by a digest: `meaning`), and its
comments with the input's;
a difference is an internal error (FormatError), never a silently changed file."""
from __future__ import annotations

from typing import List

from astral_dsl import gcpause
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.fmt.cst import Comment, concrete, normalise_newlines
from astral_dsl.fmt.printer import print_concrete
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse_concrete
from astral_dsl.syntax.source import Source


class FormatError(Exception):
    """The formatter would have changed the meaning or the comments of a file (a bug)."""


@gcpause.pausing          # the trees and tokens of a file: long-lived while it is formatted
def format_text(text: str, name: str = "<string>", verify: bool = True) -> str:
    """The canonical layout of `text`. Raises DiagnosticError (the compiler's own syntax
    diagnostic) when `text` does not parse.

    Memory: the input's syntax tree is reduced to a digest of its meaning at once, the concrete
    tree to the printed text and the comments, and the output is checked the same way, so at
    most one tree of the file is alive at a time (about 90 bytes a byte of input)."""
    text = normalise_newlines(text)
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        # one parse: the compiler's syntax diagnostics, its tree and the tree of every token
        tree, tokens = parse_concrete(Source(name, text))
        before = meaning(tree)
        del tree
        cst = concrete(text, tokens)
        del tokens
        out = print_concrete(cst)
        comments = [comment_text(c.text) for c in cst.comments]
        del cst
    except RecursionError:
        raise DiagnosticError(Diagnostic(
            "E402", Severity.ERROR, "expressions are nested too deeply to format",
            Span.at(name, 1, 1), "split the expression with `let` names")) from None
    if verify and out != text:         # the same text means the same: nothing to parse again
        _verify(name, before, comments, out)
    return out


def _verify(name: str, before: bytes, comments: List[str], out: str) -> None:
    try:
        tree, tokens = parse_concrete(Source(name, out))
        after = meaning(tree)
        del tree
        after_comments = [comment_text(c.text) for c in concrete(out, tokens).comments]
    except DiagnosticError as exc:
        raise FormatError(f"{name}: the formatted text does not parse: "
                          f"{exc.diagnostic.message}") from None
    if before != after:
        raise FormatError(f"{name}: formatting would change the meaning")
    if comments != after_comments:
        raise FormatError(f"{name}: formatting would change a comment")


def comment_text(text: str) -> str:
    """A comment as the formatter keeps it: exactly, but for whitespace at the ends of lines."""
    return "\n".join(line.rstrip() for line in text.split("\n"))


def meaning(tree: ast.Module) -> bytes:
    """A digest (SHA-256) of what a syntax tree means: its nodes and values without positions,
    and quantities without the spelling of their number and the spacing of their unit. Two
    trees mean the same exactly when their digests agree (a walk with its own stack: no
    recursion, no copy of the tree)."""
    import hashlib

    import attrs

    digest = hashlib.sha256()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (tuple, list)):
            digest.update(b"(%d" % len(node))
            stack.extend(reversed(node))
        elif isinstance(node, Span):
            digest.update(b"@")
        elif attrs.has(type(node)):
            digest.update(b"<" + type(node).__name__.encode())
            items = []
            for field in _fields(type(node)):
                value = getattr(node, field)
                if field == "text" and isinstance(node, ast.QuantityLit):
                    value = "".join(value.split())
                items.append(value)
            stack.extend(reversed(items))
        else:
            raw = repr(node).encode("utf-8", "surrogatepass")
            digest.update(b"%d:" % len(raw) + raw)
    return digest.digest()


_FIELDS: dict = {}


def _fields(cls) -> tuple:
    hit = _FIELDS.get(cls)
    if hit is None:
        import attrs

        hit = _FIELDS[cls] = tuple(f.name for f in attrs.fields(cls)
                                   if f.name not in ("span", "unit_span"))
    return hit


def is_formatted(text: str, name: str = "<string>") -> bool:
    return format_text(text, name) == text


__all__ = ["FormatError", "format_text", "is_formatted", "meaning", "comment_text"]
