"""Syntax errors as diagnostics: what was found, what was expected (in words), and a hint for
the common slips (`=` for `==`, a name read as a unit, an unclosed comment)."""
from __future__ import annotations

import re
import unicodedata

from lark import Token
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken)

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.syntax.source import Source

# Human names for grammar terminals, for "expected ..." messages.
_TERMINALS = {
    "NAME": "a name", "NUMBER": "a number", "QUANTITY": "a quantity such as `45 kW`",
    "STRING": "a string", "UNIT_SPEC": "a unit", "COMP_OP": "a comparison", "ADD_OP": "`+` or `-`",
    "MUL_OP": "`*` or `/`", "OBJECTIVE": "`minimize` or `maximize`", "LBRACE": "`{`",
    "RBRACE": "`}`", "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`",
    "EQUAL": "`=`", "COLON": "`:`", "DOT": "`.`", "SEMICOLON": "`;`", "$END": "the end of the file",
    "QMARK": "`?`", "CIRCUMFLEX": "`^`", "MINUS": "`-`", "STAR": "`*`",
}



def _expected(names) -> str:
    readable = sorted({_TERMINALS.get(n, f"`{n.lower()}`" if n.isupper() else f"`{n}`")
                       for n in names if not n.startswith("_") and n != "$END"} |
                      ({_TERMINALS["$END"]} if "$END" in names else set()))
    if not readable:
        return ""
    if len(readable) > 6:
        return "expected " + ", ".join(readable[:6]) + " or another token"
    return "expected " + (", ".join(readable[:-1]) + " or " + readable[-1]
                          if len(readable) > 1 else readable[0])


def syntax_diagnostic(source: Source, exc: UnexpectedInput) -> Diagnostic:
    name = source.name
    if isinstance(exc, (UnexpectedCharacters, UnexpectedToken)) and getattr(exc, "line", None):
        # at the `/`, or at the `*` of a `/` read as a division (`let a = 1 /* ...`)
        line = source.line(exc.line)
        for col in (exc.column, exc.column - 1):
            if col >= 1 and line[col - 1:col + 1] == "/*":
                return Diagnostic("E104", Severity.ERROR, "this `/*` comment is never closed",
                                  Span.at(name, exc.line, col, exc.line, col + 2),
                                  "end it with `*/`")
    if isinstance(exc, UnexpectedCharacters):
        ch = source.text[exc.pos_in_stream] if exc.pos_in_stream < len(source.text) else ""
        span = Span.at(name, exc.line, exc.column)
        hint = None
        if ch == "'":
            hint = "strings use double quotes: \"...\""
        elif ch == "#":
            hint = "comments start with `//`"
        elif ch in _LOGIC:
            hint = _LOGIC[ch]
        elif ch in _UNIT_LOOKALIKES and source.text[:exc.pos_in_stream].rstrip()[-1:] in \
                tuple("0123456789/"):                 # where a unit goes: `5 μW`, `kW/μs`
            hint = _UNIT_LOOKALIKES[ch]
        elif ch == "\"":
            hint = "a string must end on the line it starts"
        elif ch.isalpha():
            hint = "names use ASCII letters, digits and `_`; other text belongs in a \"string\""
        elif ch and (ch.isspace() or not ch.isprintable()):
            named = unicodedata.name(ch, "")
            hint = (f"an invisible character ({named}), often pasted from a web page or a "
                    "document: replace it with a plain space, or delete it" if named else
                    "a control character: delete it")
        code = "E107" if ch == "\"" else "E104"
        shown = repr(ch)[1:-1] if ch.isprintable() else f"U+{ord(ch):04X}" if ch else "end of file"
        return Diagnostic(code, Severity.ERROR, f"unexpected character `{shown}`", span, hint)
    at = getattr(exc, "pos_in_stream", None)
    at = len(source.text) if at is None or at < 0 or isinstance(exc, UnexpectedEOF) else at
    separated = fraction_separator(source, at)
    if separated is not None:
        return separated
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        tok = exc.token
        end_col = (tok.end_column if tok.end_line == tok.line and tok.end_column else tok.column + 1)
        span = Span.at(name, tok.line, tok.column, tok.line, max(end_col, tok.column + 1))
        names = set(exc.expected)
        if _depth(source.text[:tok.start_pos or 0]) > 0:     # inside a body: no top-level forms
            names -= {"IMPORT", "PARAM"}
        expected = _expected(names)
        hint = _unit_pitfall(source, tok) or keyword_read_hint(source, tok.line) or \
            _module_path_hint(source.line(tok.line)[:tok.column - 1], str(tok)) or \
            _hint_for(tok, exc.expected, source) or \
            _bracket_hint(source, tok, exc.expected) or _missing_hint(tok, exc.expected)
        msg = f"unexpected {_describe(tok)}" + (f"; {expected}" if expected else "")
        return Diagnostic("E103", Severity.ERROR, msg, span, hint)
    # end of file
    lines = source.text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    opener = unclosed(source.text)
    if opener is not None:             # at the bracket never closed, not at the end of the file
        ch, at_line, at_col = opener
        closer = PAIRS[ch]
        return Diagnostic("E105", Severity.ERROR,
                          f"this `{ch}` is never closed: the file ends at line {line} before "
                          f"its `{closer}`", Span.at(name, at_line, at_col),
                          f"close it with `{closer}` where its block ends")
    expected = _expected(getattr(exc, "expected", []) or [])
    last = next((n for n in range(line, 0, -1) if source.line(n).strip()), line)
    return Diagnostic("E105", Severity.ERROR,
                      "unexpected end of file" + (f"; {expected}" if expected else ""),
                      Span.at(name, line, col), keyword_read_hint(source, last) or
                      _module_path_hint(source.line(last), "") or
                      "the last statement stops in the middle: complete it, or delete it")


# `if` and `not` start an expression only where a whole condition can stand: after an operator
# that binds tighter (`1 + not x`, `2 * if c then 1 else 0`) the parser reads them as names
# (semantics/keywords.py: E222 when nothing else fails), and fails further on
PARENTHESISED = {"if": "`1 + (if c then 2 else 3)`", "not": "`a == (not b)`"}
_KEYWORD_READ = re.compile(r"(?:[-+*/^]|[<>]=?|[=!]=|\.\.<?|(?<![\w.])x)[ \t]*(if|not)\b")
_TEXT = re.compile(r'"(?:[^"\\\n]++|\\.)*+"|//[^\n]*|/\*.*?\*/')


def keyword_read_hint(source: Source, line: int) -> str | None:
    """The hint for a syntax error on a line where `if` or `not` follows an operator that binds
    tighter, and so was read as a name."""
    m = _KEYWORD_READ.search(_TEXT.sub('""', source.line(line)))
    if m is None:
        return None
    word = m.group(1)
    return (f"`{word}` after `{m.group(0)[:-len(word)].strip()}` is read as a name: it starts an "
            f"expression only where a whole condition can stand; put the `{word}` expression in "
            f"parentheses ({PARENTHESISED[word]})")


# an import's module path so far, at the start of its line (`import lib.`)
_IMPORT_PATH = re.compile(r"[ \t]*import[ \t]+([A-Za-z_][\w.]*|)[ \t]*")


def _module_path_hint(before: str, tok: str) -> str | None:
    """A module path with a dot too many (`import lib..a`, `import .a`, `import lib.`) or a `/`:
    the hint to write names joined by single dots (language.md, 3.2)."""
    m = _IMPORT_PATH.fullmatch(before)
    if m is None or not (tok in (".", "..", "..<", "/") or m.group(1).endswith(".")):
        return None
    return ("a module path is names joined by single dots, none before the first, after the last "
            "or doubled (`import lib.common` is the file lib/common.astral under the project "
            "root); no `..` or `/` reaches another folder (language.md, 3.2)")


PAIRS = {"{": "}", "(": ")", "[": "]"}
# possessive repeats, as the grammar's STRING: `(?:[^"]|\\.)*` keeps ~120 bytes of state per
# character, 600 MB for a 5 MB string in a file with a syntax error
_BRACKETS = re.compile(r'"(?:[^"\\\n]++|\\.)*+"|//[^\n]*|/\*[\s\S]*?\*/|[{}()\[\]]|\n')


def unclosed(text: str):
    """The bracket a file ends without closing, as (char, line, column), or None. Brackets are
    matched in order, outside strings and comments; when a `}` that starts its line is indented
    like an outer open `{` rather than the innermost one, the innermost is taken as the one left
    open (`rack R {` ... `}` closing the site), as a reader of the indentation would."""
    stack, suspect = _open_brackets(text)
    if not stack:
        return None
    found = suspect or stack[-1]
    return found[0], found[1], found[2]


def _open_brackets(text: str):
    """The brackets open at the end of `text`, outermost first, as (char, line, column,
    indentation), and the one a `}` indented like an outer `{` suggests is left open (or None)."""
    stack = []          # (char, line, column, indentation of its line)
    suspect = None
    line, line_start = 1, 0
    for m in _BRACKETS.finditer(text):
        tok = m.group()
        if tok == "\n":
            line, line_start = line + 1, m.end()
            continue
        if tok[0] in "\"/":
            line += tok.count("\n")
            if "\n" in tok:
                line_start = m.start() + tok.rindex("\n") + 1
            continue
        col = m.start() - line_start + 1
        head = text[line_start:m.start()]
        if tok in PAIRS:
            stack.append((tok, line, col, len(head) - len(head.lstrip(" \t"))))
            continue
        if not stack:
            continue
        top = stack.pop()
        if suspect is None and tok == "}" and not head.strip() and top[3] != len(head) and \
                any(o[0] == "{" and o[3] == len(head) for o in stack):
            suspect = top
    return stack, suspect


def _bracket_hint(source: Source, tok: Token, expected) -> str | None:
    """A `}`, `)` or `]` that closes nothing; or a `(` or `[` left open on an earlier line
    before the token that a `)` or `]` was expected in place of."""
    stack, _ = _open_brackets(source.text[:tok.start_pos or 0])
    closer = str(tok)
    if closer in ("}", ")", "]") and not stack:
        opener = {v: k for k, v in PAIRS.items()}[closer]
        return (f"this `{closer}` closes no `{opener}`: delete it, or look above for the "
                f"`{closer}` that closed its block too early")
    if stack and stack[-1][0] in "([" and stack[-1][1] < tok.line and \
            PAIRS[stack[-1][0]] in [_TERMINALS.get(n, "").strip("`") for n in expected]:
        ch, line, col, _ = stack[-1]
        return (f"the `{ch}` at line {line}, column {col} is not closed: close it with "
                f"`{PAIRS[ch]}` before this")
    return None


# A `_` in the fraction or the exponent of a number (`0.000_001`, Python's spelling): the
# grammar's number stops before it and the `_001` that is left reads as a name, so that the
# parser fails further on, where nothing is wrong.
_FRACTION_SEPARATOR = re.compile(
    r'"(?:[^"\\\n]++|\\.)*+"|//[^\n]*|/\*[\s\S]*?\*/|'
    r'(?<![\w.])(\d[\d_]*\.\d[\d_]*|\.\d[\d_]*|\d[\d_]*)([eE][+-]?\d[\d_]*)?'
    r'((?<=\d)[eE][+-]?\d\w*)?(\.[eE][+-]?\d+(?!\w))?')


def fraction_separator(source: Source, end: int) -> Diagnostic | None:
    """E106 for the first number that starts before offset `end` with a `_` in its fraction or
    exponent, or with a second exponent (`1e3e3`: the number `1e3` and the name `e3`, which no
    unit can be, so that the parser failed further on, at the next line)."""
    for m in _FRACTION_SEPARATOR.finditer(source.text):
        if m.start() >= end:
            break
        if m.group(1) is None:
            continue
        if m.group(3) is not None and m.group(2) is not None:
            return _second_exponent(source, m)
        if m.group(4) is not None and m.group(2) is None and "." not in m.group(1):
            return _point_before_exponent(source, m)
        mantissa, exponent = m.group(1), m.group(2) or ""
        fraction = mantissa.partition(".")[2]
        if "_" not in fraction and "_" not in exponent:
            continue
        text = m.group(0)
        line = source.text.count("\n", 0, m.start()) + 1
        col = m.start() - (source.text.rfind("\n", 0, m.start()) + 1) + 1
        whole = mantissa.partition(".")[0]
        fixed = whole + ("." + fraction.replace("_", "") if "." in mantissa else "") + \
            exponent.replace("_", "")
        where = "fraction" if "_" in fraction else "exponent"
        return Diagnostic("E106", Severity.ERROR,
                          f"number `{text}` has a `_` in its {where}",
                          Span.at(source.name, line, col, line, col + len(text)),
                          f"a `_` separates the digits of a number's whole part only "
                          f"(`65_536`): write `{fixed}`")
    return None


def _second_exponent(source: Source, m) -> Diagnostic:
    text = m.group(0)
    line = source.text.count("\n", 0, m.start()) + 1
    col = m.start() - (source.text.rfind("\n", 0, m.start()) + 1) + 1
    tail = re.match(r"[eE]([+-]?\d+)", m.group(3))
    scaled = f"{m.group(1)}e{int(m.group(2)[1:].replace('_', '')) + int(tail.group(1))}"
    return Diagnostic("E106", Severity.ERROR,
                      f"number `{text}` has a second exponent: `{m.group(1)}{m.group(2)}` "
                      f"then `{m.group(3)}`", Span.at(source.name, line, col, line, col + len(text)),
                      f"a number takes one exponent (`{scaled}` for {m.group(1)}{m.group(2)} "
                      f"x 10^{tail.group(1)}); a unit after it cannot start with `e` and a digit")


def _point_before_exponent(source: Source, m) -> Diagnostic:
    """`5.e3`: the number `5`, a member `e3` of it, and the parser failed further on (`5.e3 W`)."""
    text = m.group(1) + m.group(4)
    line = source.text.count("\n", 0, m.start()) + 1
    col = m.start() - (source.text.rfind("\n", 0, m.start()) + 1) + 1
    exponent = m.group(4)[1:]
    return Diagnostic("E106", Severity.ERROR, f"number `{text}` has no digit after its point",
                      Span.at(source.name, line, col, line, col + len(text)),
                      f"write `{m.group(1)}{exponent}` or `{m.group(1)}.0{exponent}`")


def _depth(text: str) -> int:
    """Brace depth at the end of `text`, ignoring comments and strings (roughly)."""
    text = re.sub(r'"(?:[^"\\\n]++|\\.)*+"|//[^\n]*|/\*.*?\*/', "", text, flags=re.S)
    return text.count("{") - text.count("}")


def _describe(tok: Token) -> str:
    if tok.type == "NAME":
        return f"name `{tok}`"
    if tok.type in ("NUMBER", "QUANTITY"):
        return f"{'number' if tok.type == 'NUMBER' else 'quantity'} `{tok}`"
    return f"`{tok}`"


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
# operators of other languages, by the character the lexer stops at
_LOGIC = {"&": "the logical and is the word `and`: `a and b`",
          "|": "the logical or is the word `or`: `a or b`",
          "!": "the negation is the word `not`: `not a` (`!=` compares)"}


# the characters of a unit as a text may write it that the unit table spells otherwise: they
# were "names use ASCII letters" (a Greek mu beside the micro sign `µW` that is read)
_MICRO = "the micro prefix is `u` or `µ` (U+00B5 MICRO SIGN), not the Greek letter: `5 uW`"
_OHM = "the unit of resistance is written `ohm`: `0.08 ohm/km`"
_UNIT_LOOKALIKES = {"\u03bc": _MICRO, "\u03a9": _OHM, "\u2126": _OHM,
                    "\u2103": "write `degC` (or `°C`): `45 degC`",
                    "\u2109": "write `degF` (or `°F`): `113 degF`",
                    "\u00ba": "a degree is `°` (U+00B0 DEGREE SIGN), or write `degC`: `45 degC`"}


# terminals an expression may start with: where the parser wants one of them, a value is missing
_VALUE_STARTS = {"NUMBER", "QUANTITY", "NAME", "STRING", "LPAR", "LSQB"}


def _missing_hint(tok: Token, expected) -> str | None:
    """A value left out (`hosts = }`), a field set with `:`, names of a list without commas."""
    names = set(expected)
    if str(tok) in (")", "}", "]", ",") and len(names & _VALUE_STARTS) >= 3:
        return f"a value is missing before this `{tok}`: complete the expression, or delete it"
    if str(tok) == ":" and "EQUAL" in names:
        return "a field or a `let` is set with `=`, not `:` (`hosts = 4 x H`)"
    if tok.type in ("NAME", "UNIT_SPEC", "NUMBER", "QUANTITY", "STRING") and "COMMA" in names \
            and names & {"RPAR", "RSQB", "RBRACE"}:
        return "separate the items with `,` (the statements of a body: with `,` or a new line)"
    return None


# the record blocks of the kinds (model/kinds.py's `records`): `parallel { ... }`, not `= {`
RECORD_BLOCKS = ("parallel", "batch", "columns")


def _hint_for(tok: Token, expected, source: Source | None = None) -> str | None:
    before = source.line(tok.line)[:tok.column - 1] if source is not None else ""
    if str(tok) == "*" and before.endswith("*"):
        return "a power is written with `^`: `2 ^ 3`"
    if tok.type == "NUMBER" and re.search(r"\d\s*%\s*$", before):
        return ("`%` is the unit percent (`3 %` is 0.03), not a remainder: the language has no "
                "remainder operator; write `a - floor(a / b) * b`")
    if str(tok) in _COMPARISONS and re.search(r"(?<!-)[<>]|[=!]=", before):
        return "comparisons do not chain: write `a < b and b < c`, not `a < b < c`"
    if str(tok) == "assumed":
        return ("`assumed \"why\"` follows a field's value, a template parameter's default or a "
                "`param`'s value (`power = 0.8 kW assumed \"no data sheet gives it\"`), not a "
                "`let` or an expression inside another")
    if tok.type == "STRING" and re.search(r"\belse[ \t]*$", before):
        return f"`else` takes the severity before the message: `else error {tok}` (or `warning`)"
    # from a name's first character only (`(?<!\w)`): a run of 20,000 of them took 3 s
    brace = re.search(r"(?<!\w)(\w+)[ \t]*=[ \t]*$", before) if str(tok) == "{" else None
    if brace:
        # `parallel = { tp = 8 }`, `fabric = { rails = 8 }`: braces hold no value
        name = brace.group(1)
        if name in RECORD_BLOCKS:
            return f"a block is written without `=`: `{name} {{ ... }}`"
        return (f"braces hold no value: declare a part here with its kind and a name "
                f"(`{name} NAME {{ ... }}`), or set the field to a template's name "
                f"(`{name} = NAME`)")
    if str(tok) != "=":
        return None
    if "COMP_OP" in expected or re.search(r"\b(check|if|and|or|not)\b", before):
        return "`=` sets a field; compare with `==`"
    return None


# tried only where a run of digits, `_` and `.` starts (the number is from its first digit):
# from every digit of a run, each scanning to the run's end, a line of 20,000 digits before an
# `=` took 24 s (every start of a run gives the same answer as its first)
_TRAILING_QUANTITY = re.compile(r"(?<![\d_.])[_.]*+(\d[\d_.]*+(?:[eE][+-]?\d+)?)[ \t]+"
                                r"([A-Za-z_]\w*)[ \t]*$")


def _unit_pitfall(source: Source, tok: Token) -> str | None:
    """`a = 4 b = 3` reads `4 b` as four bits: say so when an `=` follows such a quantity."""
    if str(tok) != "=":
        return None
    before = source.line(tok.line)[:tok.column - 1]
    m = _TRAILING_QUANTITY.search(before)
    if not m:
        return None
    head, unit = before[:m.start(2)].rstrip(), m.group(2)
    return (f"`{m.group(1)} {unit}` was read as a quantity with the unit `{unit}`; "
            f"separate statements on one line with `,` (as in `{head}, {unit} = ...`)")
