"""Print a concrete syntax tree in the canonical layout.

The layout of `astral fmt`:
- two spaces of indentation per block (`{ ... }` of a declaration or record) and per bracket
  `(` / `[` continued on a later line; a statement continued on the next line outside brackets is
  indented one more level;
- one space around binary operators (`^` too: `2 m ^ 2` squares a quantity while `2 m^2` is an
  area), comparisons, `=`, `x`, `to` and the keywords; none inside `( )` and `[ ]`, before `,` and
  `:`, around `.` and `..`, after a unary `-`, nor before the `(` of a call or parameter list and
  the `[` of an index; one inside each brace of `{ a = 1 }`; a quantity is its number, one space,
  its unit (`45 kW`, `75 %`; a word that only reads as a quantity, `1f1b`, is kept);
- every top-level item and every declaration or record block on its own line (a block holding a
  declaration among other statements is printed over several lines); other statements stay on
  the lines the author put them on, separated by the `,` or `;` written between them (`, ` where
  none was); a separator at the end of a line goes; a block written over several lines gets its
  `{` at the end of its header and its `}` on a line of its own;
- line breaks inside expressions stay where the author put them; at most one blank line in a row,
  none at the start of the file or of a block, none at the end of a block; one newline at the end
  of the file; no trailing whitespace, CRLF becomes LF;
- comments are kept exactly (but for whitespace at the ends of their lines) and in place: a
  comment on a line of its own is indented like the code after it; a comment at the end of a line
  keeps its column when the code before it leaves room (hand-aligned comments stay aligned), else
  it follows the code after one space.
Nothing is ever reordered, and number, name, unit and string spellings are kept."""
from __future__ import annotations

from typing import List, Optional


from astral_dsl import records
from astral_dsl.fmt.cst import CLOSERS, OPENERS, Comment, Concrete, Tok

INDENT = "  "


@records.define
class _Open:
    tok: Tok
    kind: str          # body | bracket
    ref: int           # the indentation level its contents are one deeper than


class Printer:
    def __init__(self, cst: Concrete):
        self.text = cst.text
        self.tokens = cst.tokens
        self.comments = cst.comments
        self.lines: List[str] = []
        self.line: Optional[str] = None    # None: a new line starts at the next output
        self.level = 0                     # indentation level of the current line
        self.stack: List[_Open] = []
        self.stmt_indent: List[int] = [0]  # per block: level of its current statement's line
        self.prev: Optional[Tok] = None
        self.after_comment = False

    # -- lines ------------------------------------------------------------------------------------
    def line_break(self, blank: bool) -> None:
        if self.line is None:
            if not self.lines:
                return                     # nothing printed yet: no leading blank lines
            if blank and self.lines[-1] != "":
                self.lines.append("")
            return
        self.lines.extend(part.rstrip() for part in self.line.split("\n"))
        if blank:
            self.lines.append("")
        self.line = None

    def put(self, text: str, level: int, space: bool) -> None:
        if self.line is None:
            self.level = level
            self.line = INDENT * level + text
        else:
            self.line += (" " if space else "") + text

    # -- indentation -------------------------------------------------------------------------------
    def indent_for(self, tok: Optional[Tok]) -> int:
        """The indentation of a line starting with `tok` (None: the end of the file)."""
        if tok is not None and tok.type in CLOSERS and self.stack:
            return self.stack[-1].ref
        top = self.stack[-1] if self.stack else None
        if top is None or top.kind == "body":
            base = top.ref + 1 if top is not None else 0
            if tok is None or tok.stmt_start:
                return base
            return base + 1                # a statement continued on the next line
        return top.ref + 1

    def comment_indent(self, nxt: Optional[Tok]) -> int:
        """A comment on a line of its own is indented like the code after it (inside a block
        that ends after it, like the block's contents)."""
        if nxt is not None and nxt.type in CLOSERS and self.stack:
            top = self.stack[-1]
            return top.ref + 1
        return self.indent_for(nxt)

    # -- structure ---------------------------------------------------------------------------------
    def is_broken(self, open_tok: Tok) -> bool:
        """A block written over several lines (and not empty) is printed over several lines."""
        if open_tok.crowded:
            return True                    # a declaration shares the block with others
        inner = self.text[open_tok.end:open_tok.close_start]
        return "\n" in inner and bool(inner.strip(" \t\n,;"))

    def forced(self, prev: Optional[Tok], tok: Optional[Tok]) -> Optional[str]:
        """'break' or 'join' where the layout decides whatever the source says."""
        if tok is None or prev is None:
            return None
        if tok.stmt_start and not tok.first_in_block and (
                tok.top_level or tok.block_stmt or tok.after_block_stmt):
            return "break"                 # one top-level item / declaration per line
        if tok.body_open:
            return "join"                  # `{` ends the declaration's header line
        if prev.body_open:
            return "break" if self.is_broken(prev) else "join"
        if tok.body_close:
            return "break" if self.is_broken(tok.partner) else "join"
        return None

    # -- gaps --------------------------------------------------------------------------------------
    def plan(self, prev: Optional[Tok], nxt: Optional[Tok], comments: List[Comment]):
        """The steps between two tokens: [gap, comment, gap, comment, ..., gap], a gap being
        0 (same line), 1 (next line) or 2 (after a blank line)."""
        start = prev.end if prev is not None else 0
        end = nxt.start if nxt is not None else len(self.text)
        bounds = [start] + [p for c in comments for p in (c.start, c.end)] + [end]
        gaps = []
        for i, (a, b) in enumerate(zip(bounds[0::2], bounds[1::2])):
            nl = self.text.count("\n", a, b)
            level = 2 if nl >= 2 else nl
            if i == 0 and prev is None:
                level = 0
            if i == 0 and prev is not None and prev.type in OPENERS:
                level = min(level, 1)
            if i == len(comments) and nxt is not None and nxt.type in CLOSERS:
                level = min(level, 1)
            if i > 0 and comments[i - 1].is_line:
                level = max(level, 1)
            gaps.append(level)
        return gaps

    def gap(self, prev: Optional[Tok], tok: Optional[Tok], comments: List[Comment]) -> None:
        gaps = self.plan(prev, tok, comments)
        force = self.forced(prev, tok)
        if force == "break" and gaps[-1] == 0:
            gaps[-1] = 1
        elif force == "join" and not comments:
            gaps[-1] = 0
        if tok is not None and tok.stmt_start and not tok.first_in_block and not any(gaps):
            self.line += tok.sep_text      # statements sharing a line: `,` (or `;` if written)
        for i, c in enumerate(comments):
            if gaps[i]:
                self.line_break(gaps[i] == 2)
            self.put_comment(c, tok, ends_line=c.is_line or gaps[i + 1] > 0)
        if gaps[-1]:
            self.line_break(gaps[-1] == 2)

    def put_comment(self, c: Comment, nxt: Optional[Tok], ends_line: bool) -> None:
        if self.line is None:
            self.put(c.text, self.comment_indent(nxt), False)
        elif ends_line:
            # a comment ending a line of code keeps its column when there is room
            width = len(self.line.rsplit("\n", 1)[-1])
            self.line += " " * max(c.column - 1 - width, 1) + c.text
        else:
            self.line += " " + c.text
        self.after_comment = True

    # -- tokens ------------------------------------------------------------------------------------
    def emit(self, tok: Tok) -> None:
        space = self.after_comment or self.space_between(self.prev, tok)
        self.put(tok.text, self.indent_for(tok), space)
        self.after_comment = False
        if tok.stmt_start:
            self.stmt_indent[-1] = self.level
        if tok.type in OPENERS:
            if tok.body_open:
                self.stack.append(_Open(tok, "body", self.stmt_indent[-1]))
                self.stmt_indent.append(self.stmt_indent[-1] + 1)
            else:
                self.stack.append(_Open(tok, "bracket", self.level))
        elif tok.type in CLOSERS:
            opened = self.stack.pop()
            if opened.kind == "body":
                self.stmt_indent.pop()
        self.prev = tok

    @staticmethod
    def space_between(prev: Optional[Tok], tok: Tok) -> bool:
        if prev is None:
            return False
        if prev.type in ("LPAR", "LSQB"):
            return False
        if prev.type == "LBRACE":
            return tok.type != "RBRACE"
        if tok.type in ("RPAR", "RSQB", "COMMA", "COLON"):
            return False
        if tok.type == "DOT" or prev.type == "DOT" or tok.text in ("..", "..<") \
                or prev.text in ("..", "..<"):
            return False
        if prev.unary or tok.tight_before:
            return False
        return True

    def run(self) -> str:
        ci = 0
        comments = self.comments
        for tok in self.tokens + [None]:
            bound = tok.start if tok is not None else len(self.text) + 1
            mine = []
            while ci < len(comments) and comments[ci].start < bound:
                mine.append(comments[ci])
                ci += 1
            self.gap(self.prev, tok, mine)
            if tok is not None:
                self.emit(tok)
        self.line_break(False)
        while self.lines and self.lines[-1] == "":
            self.lines.pop()
        return "\n".join(self.lines) + "\n" if self.lines else ""


def print_concrete(cst: Concrete) -> str:
    return Printer(cst).run()
