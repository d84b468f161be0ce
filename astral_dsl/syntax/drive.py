"""The LALR loop and the contextual lexer of a parser whose callbacks build the AST (reduce.py),
in one Python function over Lark's own tables and regular expressions.

Lark's loop costs a generator step, two method calls and a Token built through two more calls
per token, and a dictionary lookup, a slice and a callback per reduction. Most reductions are a
`?rule` passing its single child on (`itemgetter(0)`): a number goes through fourteen of them
(`expr`, `cond`, ... `postfix`, `atom`) before the parser sees what follows it. Here such a
chain is one lookup: the state it ends in depends only on the state below the child, the
child's own state and the token that follows, and is kept once found. Everything else is what
Lark does, in the same order: each token is lexed by the scanner of the parser's state (the
contextual lexer: Lark's compiled scanners, their order and their keyword callbacks), tokens
carry the same positions, the other reductions call the same callbacks with the same children.

Nothing unusual is handled here: a text that does not lex or parse, or a Lark whose internals
are not the ones known here, goes to Lark's own loop (larkroad.py), whose errors are the
reference."""
from __future__ import annotations

import re
from typing import Any, Dict, Optional

from lark import Token

from astral_dsl.syntax.reduce import PASS


# The type each value of a terminal with keyword callbacks lexes as (per scanner) is kept, at
# most this many values (a language server parses file after file with the same scanners).
MEMO = 4096


class Stuck(Exception):
    """The text does not lex or parse: Lark's own loop reports why."""


class Driver:
    """Lark's LALR loop over its parse table and contextual lexer (`driver` makes one)."""

    def __init__(self, tables, lexers, unless):
        self._actions, self._gotos, self._start, self._end = tables
        self._of = lexers               # Lark's lexer of each state
        self._unless = unless           # Lark's UnlessCallback (the keywords)
        self._lexers: Dict[bool, Dict[int, Any]] = {False: {}, True: {}}   # by `skipping`
        self._made: Dict[Any, Any] = {}
        self._chains: Dict[Any, int] = {}

    def parse(self, text: str, start: str):
        """The value of the start rule for `text`; raises Stuck where Lark would raise."""
        actions, gotos, chains = self._actions, self._gotos, self._chains
        skipping = len(text) >= SKIP_FROM
        lexers = self._lexers[skipping]
        end_state = self._end[start]
        states = [self._start[start]]
        values = []
        new = str.__new__
        pos, line, line_start, size = 0, 1, 0, len(text)
        token = None
        while True:
            # -- the next token, by the scanner of the parser's state
            try:
                scan, skip, ignore, newline, keywords, keywords_of = lexers[states[-1]]
            except KeyError:
                scan, skip, ignore, newline, keywords, keywords_of = \
                    self._lexer(states[-1], skipping)
            while True:
                if pos >= size:
                    ending = True
                    break
                m = skip(text, pos) if skip is not None else None
                if m is not None:               # the blanks before a token, and the token
                    kind = m.lastgroup
                    value = m.group(kind)
                    start = m.start(kind)
                    if start != pos:
                        lines = text.count("\n", pos, start)
                        if lines:
                            line += lines
                            line_start = text.rindex("\n", pos, start) + 1
                        pos = start
                else:
                    m = scan(text, pos)
                    if m is None:
                        raise Stuck
                    value = m.group()
                    kind = m.lastgroup
                first, column = line, pos - line_start + 1
                if kind in newline:
                    lines = value.count("\n")
                    if lines:
                        line += lines
                        line_start = pos + value.rindex("\n") + 1
                pos += len(value)
                if kind in ignore:
                    continue
                token = new(Token, value)
                token.type = kind
                token.start_pos = pos - len(value)
                token.value = value
                token.line = first
                token.column = column
                token.end_line = line
                token.end_column = pos - line_start + 1
                token.end_pos = pos
                if kind in keywords:            # a NAME that is a keyword here (Lark's
                    known = keywords[kind]      # UnlessCallback: its value decides)
                    retyped = known.get(value)
                    if retyped is None:
                        if len(known) >= MEMO:
                            known.clear()
                        retyped = known[value] = keywords_of[kind](token).type
                    token.type = kind = retyped
                ending = False
                break
            if ending:
                kind = "$END"
            # -- reduce, then shift it (or end)
            while True:
                top = states[-1]
                try:
                    shift, arg = actions[top][kind]
                except KeyError:
                    raise Stuck from None
                if shift:
                    if ending:
                        raise Stuck
                    states.append(arg)
                    values.append(token)
                    break
                length, origin, callback = arg
                if callback is None:            # a chain of `?rule: child`: one lookup
                    below = states[-2]
                    key = (below, top, kind)
                    found = chains.get(key)
                    if found is None:
                        found = chains[key] = self._chain(below, top, kind)
                    states[-1] = found
                    if ending and found == end_state:
                        return values[-1]
                    continue
                if length:
                    children = values[-length:]
                    del states[-length:]
                    del values[-length:]
                else:
                    children = []
                states.append(gotos[states[-1]][origin])
                values.append(callback(children))
                if ending and states[-1] == end_state:
                    return values[-1]

    def _lexer(self, state: int, skipping: bool):
        """The scanners and token kinds of `state`'s lexer (Lark's, made and kept on first use:
        compiling the regular expressions of all 67 took 28 ms, and a text meets fewer), with
        the scanner that skips blanks (`_skipper`) when `skipping`."""
        lexer = self._of.get(state)
        if lexer is None:
            raise Stuck
        entry = self._made.get((id(lexer), False))
        if entry is None:
            scanner = lexer.scanner
            if any(kind in lexer.callback for kind in lexer.ignore_types) or \
                    any(type(f) is not self._unless for f in lexer.callback.values()):
                raise Stuck
            entry = self._made[id(lexer), False] = (
                _scanner(tuple(mre.match for mre in scanner._mres)), None,
                frozenset(lexer.ignore_types), frozenset(lexer.newline_types),
                {kind: {} for kind in lexer.callback}, dict(lexer.callback))
        if skipping:
            plain = entry
            entry = self._made.get((id(lexer), True))
            if entry is None:
                skip = _skipper(lexer.scanner, plain[2])
                entry = self._made[id(lexer), True] = (plain[0], skip, *plain[2:])
        self._lexers[skipping][state] = entry
        return entry

    def _chain(self, below: int, top: int, kind: str) -> int:
        """The state after the `?rule: child` reductions that `kind` calls for on `top` over
        `below` (the child keeps its place on the stack and its value)."""
        actions, gotos = self._actions, self._gotos
        while True:
            shift, arg = actions[top].get(kind, (True, None))
            if shift or arg[2] is not None or top in self._end.values():
                return top
            top = gotos[below][arg[1]]


def _scanner(matches):
    """The match of the first of a scanner's regular expressions that matches at a position
    (Lark splits a scanner whose alternation has too many groups for one): the one itself when
    there is one, as there is for every state of this grammar."""
    if len(matches) == 1:
        return matches[0]

    def scan(text: str, pos: int):
        for match in matches:
            m = match(text, pos)
            if m is not None:
                return m
        return None
    return scan


# From this many characters a text is lexed with `_skipper`'s scanners: compiling them costs
# about as much as they save on 100 kB (the reference design, 13 kB, is lexed without them).
SKIP_FROM = 100_000


def _skipper(scanner, ignore):
    """The match of a token together with the run of blanks before it, when Lark would take
    that run as one ignored token of its own (half the matches of a design are such runs): the
    scanner's alternation preceded by `(?>(?!EARLIER)(?:BLANKS))?`, where BLANKS is the ignored
    terminal that matches a space and EARLIER the terminals Lark tries before it, so the run is
    taken exactly where Lark's scanner would take it; None when the scanner is split in several
    expressions or ignores no blanks. A token it does not find is looked for as before."""
    terminals, mres = scanner.terminals, scanner._mres
    if len(mres) != 1:
        return None
    for i, terminal in enumerate(terminals):
        blanks = terminal.pattern.to_regexp()
        if terminal.name in ignore and re.fullmatch(blanks, " "):
            earlier = "|".join(f"(?:{t.pattern.to_regexp()})" for t in terminals[:i])
            guard = f"(?!{earlier})" if earlier else ""
            try:
                return re.compile(f"(?>{guard}(?:{blanks}))?(?:{mres[0].pattern})",
                                  mres[0].flags).match
            except re.error:
                return None
    return None


def driver(parser) -> Optional[Driver]:
    """A Driver for `parser` (reduce.install's), or None when this Lark's internals are not the
    ones known here."""
    try:
        frontend = parser.parser
        inner = frontend.parser.parser
        table = inner.parse_table
        callbacks = inner.callbacks
        contextual = frontend.lexer
        from lark.lexer import ContextualLexer, UnlessCallback
        from lark.parsers.lalr_analysis import Shift

        if type(contextual) is not ContextualLexer or parser.options.postlex is not None or \
                parser.options.lexer_callbacks or parser.options.use_bytes or frontend.skip_lexer:
            return None
        actions: Dict[int, Dict[str, Any]] = {}
        gotos: Dict[int, Dict[str, int]] = {}
        for state, row in table.states.items():
            actions[state], gotos[state] = {}, {}
            for symbol, (action, arg) in row.items():
                if action is Shift:
                    if symbol.isupper() or symbol == "$END":
                        actions[state][symbol] = (True, arg)
                    else:
                        gotos[state][symbol] = arg
                    continue
                callback = callbacks[arg]
                chain = callback is PASS and len(arg.expansion) == 1
                actions[state][symbol] = (False, (len(arg.expansion), arg.origin.name,
                                                  None if chain else callback))
        lexers = dict(contextual.lexers)
        if set(lexers) != set(actions):
            return None
        return Driver((actions, gotos, dict(table.start_states), dict(table.end_states)),
                      lexers, UnlessCallback)
    except (AttributeError, TypeError, KeyError, ImportError):
        return None
