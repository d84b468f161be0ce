"""Parse .astral text into the AST (Lark LALR, contextual lexer: the roads are larkroad.py's).

Lark is imported only when a text is parsed (larkroad.py, imported in the functions below):
`astral check` of a design whose syntax trees come from the per-user cache starts without it."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from astral_dsl import gcpause
from astral_dsl.diagnostics import Diagnostic, DiagnosticError
from astral_dsl.syntax import ast
from astral_dsl.syntax.source import Source

# How deep the syntax tree of a file may nest (expressions, brackets and bodies alike: a call
# is two levels, an operator, a bracket or a body one). Every later pass (the evaluator, the
# formatter, the language server) walks the tree recursively and needs about three Python frames
# a level, within the interpreter's limit of 1,000: 200 levels leave room for the callers.
MAX_NESTING = 200

# How many tokens a file may hold. A token costs about 450 bytes of memory through the parse
# and as much again compiled (a list of 400,000 numbers, 800 kB of text: 390 MB, 7.7 s), so the
# 8 MiB cap on a file's bytes (E108) let one list take about 4 GB before any diagnostic; the
# largest shipped file holds 1,262 tokens (stdlib/hardware.astral). A token is at least one
# character: only a longer text is counted (bound_tokens), so no design pays for the count.
MAX_TOKENS = 250_000


def parse(source: Source) -> ast.Module:
    """Parse a whole file. Raises DiagnosticError on a syntax error (TooManyTokens, one, for
    a text past MAX_TOKENS)."""
    bound_tokens(source)
    from astral_dsl.syntax import larkroad     # Lark, only when a text is parsed (start-up)

    with gcpause.paused():             # a syntax tree is long-lived: none of it is garbage
        node = larkroad.reduced(source, "start", False)
        if node is not None:
            return node.value
        return larkroad.build(source.name, larkroad.run(source, "start"))


class TooManyTokens(DiagnosticError):
    """A text past MAX_TOKENS (E108): not parsed, and no later statement parsed either."""


# A token as the lexer reads it, give or take (a quantity and its unit one, `4 x` one too; a
# string one; comments none; never fewer than the lexer's by more than `4 x`'s one: a unit is
# read as the grammar's _UNIT, so `1 a-a-a` is six), each alternative linear in what it reads,
# and a block comment's end found with str.find, once
_UNIT_ATOM = r'[A-Za-z%\u00b0\u00b5]\w*+(?:\^-?\d++)?+'
_TOKEN = r'(?P<c>//[^\n]*+)|(?P<b>/\*)|"(?:[^"\\\n]++|\\.)*+"?|' \
         r'\d[\d_]*+(?:\.\d++)?(?:[eE][+-]?\d++)?(?:[ \t]*+' + _UNIT_ATOM + \
         r'(?:[*/]' + _UNIT_ATOM + r')*+)?|\w++|\S'


_BLANKS_TOKEN = re.compile(r'\s*+(?P<t>)(?:' + _TOKEN + ')')


def count_tokens(text: str, most: int) -> Tuple[int, Optional[int]]:
    """(the tokens of `text`, counted up to `most + 1`; the offset of token `most + 1`, or None
    when there are at most `most`). A block comment left open ends the count: the lexer says
    where it is not closed."""
    # the blanks before a token skipped in the match, not by a search trying each alternative
    # at each blank (no alternative starts with one): 16 MiB of spaces 0.9 -> 0.05 s
    match = _BLANKS_TOKEN.match
    pos = count = 0
    while True:
        m = match(text, pos)
        if m is None:
            return count, None
        start, pos = m.start("t"), m.end()
        if m.lastgroup == "b":
            end = text.find("*/", pos)
            if end < 0:
                return count, None
            pos = end + 2
        elif m.lastgroup != "c":
            count += 1
            if count > most:
                return count, start


def too_many_tokens(source: Source, offset: int, whose: str) -> Diagnostic:
    """E108 at the token at `offset`, the first past MAX_TOKENS in what `whose` names."""
    from astral_dsl.diagnostics import Severity, Span

    text = source.text
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return Diagnostic(
        "E108", Severity.ERROR, f"`{source.name}` is too large to compile: {whose} more than "
                                f"{MAX_TOKENS:,} tokens (names, numbers, strings and signs), "
                                f"this one past the limit", Span.at(source.name, line, column),
        "describe repetition with replication (`2048 x Rack`), templates and `for` rather than "
        "item by item")


def bound_tokens(source: Source) -> None:
    """TooManyTokens (E108, at the token past the limit) for a text of more than MAX_TOKENS
    tokens, found before it is parsed; a text no longer than MAX_TOKENS characters is not
    read. (The module loader holds all the modules of a design to the limit together.)"""
    if len(source.text) <= MAX_TOKENS:
        return
    _, past = count_tokens(source.text, MAX_TOKENS)
    if past is not None:
        raise TooManyTokens(too_many_tokens(source, past, "it holds"))


def parse_concrete(source: Source):
    """(a whole file's AST, the Lark tree of all its tokens that the formatter reads: the tree
    of Lark's `keep_all_tokens`), from one parse. Raises DiagnosticError on a syntax error."""
    bound_tokens(source)
    from astral_dsl.syntax import larkroad     # Lark, only when a text is parsed (start-up)

    with gcpause.paused():
        node = larkroad.reduced(source, "start", True)
        if node is not None:
            return node.value, node.concrete
        module = larkroad.build(source.name, larkroad.run(source, "start"))
        return module, larkroad.concrete_parser().parse(source.text)


# compiled by `re` on first use: only a file with a syntax error needs it (for start-up)
_TOP_LEVEL = r"^(?:(?:import|param|let|check)\b|[A-Za-z_]\w*[ \t]+[A-Za-z_]\w*[ \t]*[({=])"
MAX_SYNTAX_ERRORS = 20


def parse_all(source: Source) -> Tuple[Optional[ast.Module], List[Diagnostic]]:
    """Parse a file and report every independent syntax error: after an error, parsing starts
    again at the next top-level statement (a line that starts at column 1 with a declaration,
    `import`, `param`, `let` or `check`); earlier lines are blanked so positions stay true."""
    try:
        return parse(source), []
    except TooManyTokens as exc:
        return None, [exc.diagnostic]
    except DiagnosticError as exc:
        first = exc.diagnostic
    diagnostics = [first]
    lines = source.text.split("\n")
    last = _line_of(first)
    while len(diagnostics) < MAX_SYNTAX_ERRORS:
        restart = next((i for i in range(last, len(lines)) if re.match(_TOP_LEVEL, lines[i])), None)
        if restart is None:
            break
        rest = Source(source.name, "\n" * restart + "\n".join(lines[restart:]))
        try:
            parse(rest)
            break
        except TooManyTokens:
            break
        except DiagnosticError as again:
            line = _line_of(again.diagnostic)
            if line <= last:
                break
            diagnostics.append(again.diagnostic)
            last = line
    return None, diagnostics


def _line_of(d: Diagnostic) -> int:
    return d.span.start.line if d.span is not None else 1 << 30


def parse_expression(source: Source) -> ast.Expr:
    from astral_dsl.syntax import larkroad     # Lark, only when a text is parsed (start-up)

    node = larkroad.reduced(source, "expr_only", False)
    if node is not None:
        return node.value
    return larkroad.build(source.name, larkroad.run(source, "expr_only"))


