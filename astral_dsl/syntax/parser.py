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


def parse(source: Source) -> ast.Module:
    """Parse a whole file. Raises DiagnosticError on a syntax error."""
    from astral_dsl.syntax import larkroad     # Lark, only when a text is parsed (start-up)

    with gcpause.paused():             # a syntax tree is long-lived: none of it is garbage
        node = larkroad.reduced(source, "start", False)
        if node is not None:
            return node.value
        return larkroad.build(source.name, larkroad.run(source, "start"))


def parse_concrete(source: Source):
    """(a whole file's AST, the Lark tree of all its tokens that the formatter reads: the tree
    of Lark's `keep_all_tokens`), from one parse. Raises DiagnosticError on a syntax error."""
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


