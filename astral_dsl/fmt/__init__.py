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
from astral_dsl.syntax.source import Source, lone_carriage_return


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
    lone_carriage_return(Source(name, text))   # E104: the lines an editor shows are not ours
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
    recursion, no copy of the tree). What each node adds: `(N` for a tuple or list of N,
    `@` for a span, `<Name` for a node (then its fields in order), `LEN:repr` for a value;
    what a type is, is decided once per type."""
    import hashlib

    digest = hashlib.sha256()
    parts: List[bytes] = []
    stack = [tree]
    pop, push, add = stack.pop, stack.extend, parts.append
    while stack:
        node = pop()
        kind = type(node)
        what = _KINDS.get(kind)
        if what is None:
            what = _KINDS[kind] = _kind_of(kind)
        if what is _SEQUENCE:
            add(b"(%d" % len(node))
            push(reversed(node))
        elif what is _SPAN:
            add(b"@")
        elif what is _VALUE:
            raw = repr(node).encode("utf-8", "surrogatepass")
            add(b"%d:" % len(raw) + raw)
        else:
            name, fields, quantity = what
            add(name)
            items = [getattr(node, f) for f in fields]
            if quantity:
                items[fields.index("text")] = "".join(node.text.split())
            push(reversed(items))
        if len(parts) >= 4096:
            digest.update(b"".join(parts))
            parts.clear()
    digest.update(b"".join(parts))
    return digest.digest()


_SEQUENCE, _SPAN, _VALUE = object(), object(), object()
_KINDS: dict = {}


def _kind_of(kind: type):
    """What `meaning` adds for a node of this type: a sequence, a span, a value, or
    (b"<Name", its fields but its positions, whether it is a quantity's literal)."""
    if issubclass(kind, (tuple, list)):
        return _SEQUENCE
    if issubclass(kind, Span):
        return _SPAN
    if issubclass(kind, ast.Node):
        fields = tuple(f for f in kind._fields if f not in ("span", "unit_span"))
        return (b"<" + kind.__name__.encode(), fields,
                issubclass(kind, ast.QuantityLit) and "text" in fields)
    return _VALUE


def is_formatted(text: str, name: str = "<string>") -> bool:
    return format_text(text, name) == text


__all__ = ["FormatError", "format_text", "is_formatted", "meaning", "comment_text"]
