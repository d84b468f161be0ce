"""The concrete syntax of a .astral file for the formatter: every token (punctuation included)
with its role, and every comment with its position.

The compiler's syntax tree drops punctuation and comments. The formatter reads the tree of
every token that the compiler's parse builds beside it (syntax.parser.parse_concrete: the tree
Lark builds with `keep_all_tokens=True`), so it sees the exact token stream, and finds comments
by scanning the gaps between tokens (a gap holds only whitespace, statement separators and
comments)."""
from __future__ import annotations

import re
from typing import List, Optional


from astral_dsl import records
from lark import Token, Tree


# Openers and closers of brackets.
OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE"}
CLOSERS = {v: k for k, v in OPENERS.items()}

# Rules whose direct COMMA/SEMICOLON children are statement separators.
_SEP_PARENTS = ("start", "body", "import_stmt", "param_stmt")
_STMT_RULES = {"decl", "field", "record", "let_stmt", "check_stmt", "fail_stmt", "set_stmt",
               "objective", "allow_stmt", "import_stmt", "param_stmt"}

_COMMENT = re.compile(r"//[^\n]*|/\*[\s\S]*?\*/")   # no state per character (see the grammar)
_QUANTITY = re.compile(r"^(?P<num>(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)[ \t]*"
                       r"(?P<unit>.*)$", re.S)


@records.define(eq=False)
class Tok:
    type: str
    text: str                    # as it will be printed
    start: int                   # offsets in the (normalised) source
    end: int
    line: int
    column: int
    # roles
    sep: bool = False            # a statement separator (dropped and re-inserted by the printer)
    tight_before: bool = False   # `(` of a call or parameter list, `[` of an index
    body_open: bool = False      # `{` of a declaration or record body
    body_close: bool = False
    stmt_start: bool = False     # first token of a statement or top-level item
    top_level: bool = False      # ... at the top of the file
    first_in_block: bool = False
    block_stmt: bool = False     # the statement is a declaration or a record block
    after_block_stmt: bool = False   # the previous statement of the block is one
    unary: bool = False          # unary minus
    crowded: bool = False        # `{` of a body holding a declaration among other statements
    sep_text: str = ","          # the separator written before this statement, if any
    partner: Optional["Tok"] = None  # of a closing bracket: its opening one
    close_start: int = -1            # of an opening bracket: where its closing one starts
    # (no reference back from an opener: the tokens hold no cycles, so they go as soon as the
    # formatter drops them)


@records.frozen
class Comment:
    text: str
    start: int
    end: int
    line: int
    column: int

    @property
    def is_line(self) -> bool:
        return self.text.startswith("//")


@records.define(eq=False)
class Concrete:
    text: str
    tokens: List[Tok]
    comments: List[Comment]


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n")


def concrete(text: str, tree: Optional[Tree] = None) -> Concrete:
    """The tokens of `text` with their roles, and its comments, from its tree of all tokens
    (`tree`, from syntax.parser.parse_concrete with the AST: one parse for both), or parsed
    here (`text` already known to be syntactically valid)."""
    if tree is None:
        from astral_dsl.syntax.parser import parse_concrete
        from astral_dsl.syntax.source import Source

        tree = parse_concrete(Source("<formatted>", text))[1]
    tokens: List[Tok] = []
    _walk(tree, tokens, text)
    comments = _comments(text, tokens)
    return Concrete(text, [t for t in tokens if not t.sep], comments)


def _is_unit(text: str) -> bool:
    from astral_dsl.units.table import is_unit

    return is_unit(text)


def _tok(t: Token) -> Tok:
    text = str(t)
    if t.type == "QUANTITY":
        m = _QUANTITY.match(text)
        if _is_unit(m.group("unit")):       # `1f1b` is a keyword that reads as a quantity
            text = f"{m.group('num')} {m.group('unit')}"
    return Tok(t.type, text, t.start_pos, t.end_pos, t.line, t.column)


def _walk(tree: Tree, out: List[Tok], text: str) -> None:
    """Flatten the tree into tokens, marking roles."""
    def visit(node, parent: Optional[Tree]):
        if isinstance(node, Token):
            tok = _tok(node)
            if parent is not None and parent.data in _SEP_PARENTS and \
                    node.type in ("COMMA", "SEMICOLON"):
                tok.sep = True
            out.append(tok)
            return tok
        data = node.data
        first_index = len(out)
        if data in ("start", "body"):
            _visit_block(node, data == "start")
            return None
        for child in node.children:
            visit(child, node)
        if data in ("call", "params", "index"):
            _mark_tight(node, out, first_index)
        if data == "neg":
            out[first_index].unary = True
        return None

    def _visit_block(node: Tree, top: bool):
        prev_block = None
        first = True
        heads = []
        brace = None
        children = node.children
        for k, child in enumerate(children):
            if top:
                children[k] = None     # each item's subtree goes once its tokens are made
            if isinstance(child, Token):
                tok = visit(child, node)
                if child.type == "LBRACE":
                    tok.body_open = True
                    brace = brace or tok
                elif child.type == "RBRACE":
                    tok.body_close = True
                continue
            i = len(out)
            visit(child, node)
            if child.data in _STMT_RULES and len(out) > i:
                head = next((t for t in out[i:] if not t.sep), None)
                if head is None:
                    continue
                head.stmt_start = True
                head.top_level = top
                head.first_in_block = first
                head.block_stmt = child.data in ("decl", "record")
                head.after_block_stmt = bool(prev_block)
                prev_block = head.block_stmt
                first = False
                heads.append(head)
        if not top and brace is not None and len(heads) > 1 and any(h.block_stmt for h in heads):
            brace.crowded = True

    visit(tree, None)
    del visit, _visit_block      # the two closures refer to each other: no cycle holds `out`
    # the separator written between two statements sharing a line: `,` or `;`
    pending = None
    for t in out:
        if t.sep:
            pending = pending or t.text
        elif t.stmt_start:
            t.sep_text = pending or ","
            pending = None
        else:
            pending = None
    # match brackets
    opened: List[Tok] = []
    for t in out:
        if t.type in OPENERS:
            opened.append(t)
        elif t.type in CLOSERS:
            o = opened.pop()
            o.close_start, t.partner = t.start, o


def _mark_tight(node: Tree, out: List[Tok], first_index: int) -> None:
    """In `call`, `params` and `index`, the opening bracket hugs what precedes it."""
    want = "LSQB" if node.data == "index" else "LPAR"
    # The bracket is the first `want` token at this node's own level: the child tokens of
    # `node` itself (not of its sub-trees).
    for child in node.children:
        if isinstance(child, Token) and child.type == want:
            for t in out[first_index:]:
                if t.start == child.start_pos and t.type == want:
                    t.tight_before = True
                    return


def _comments(text: str, tokens: List[Tok]) -> List[Comment]:
    """Comments live in the gaps between tokens (and before the first, after the last)."""
    out: List[Comment] = []
    bounds = [0] + [p for t in tokens for p in (t.start, t.end)] + [len(text)]
    line_starts = _line_starts(text)
    for a, b in zip(bounds[0::2], bounds[1::2]):
        if b <= a:
            continue
        for m in _COMMENT.finditer(text, a, b):
            line, col = _position(line_starts, m.start())
            out.append(Comment(m.group(0), m.start(), m.end(), line, col))
    return out


def _line_starts(text: str) -> List[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _position(line_starts: List[int], offset: int):
    import bisect

    i = bisect.bisect_right(line_starts, offset) - 1
    return i + 1, offset - line_starts[i] + 1
