"""The TextMate grammar (editors/vscode/syntaxes/astral.tmLanguage.json) against the examples.

A small driver below runs the grammar as an editor does (line by line, `match` and `begin`/`end`
rules, captures, `include`s, the earliest match winning and an `end` winning ties), with
Python's `re` for the regexes (the grammar keeps to the syntax Oniguruma and Python share).

Checked: every token class of the language appears across the examples; no non-blank character
of an example (nor of the stdlib or the docs' snippets) is left with only the file's scope; every
scope the grammar names is used somewhere; every keyword of grammar/astral.lark and every kind of
model/kinds.py is highlighted as one; and a few lines get exactly the scopes they should."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from astral_dsl.model.kinds import KINDS
from astral_dsl.semantics.builtins import BUILTINS

REPO = Path(__file__).resolve().parents[1]
GRAMMAR_PATH = REPO / "editors" / "vscode" / "syntaxes" / "astral.tmLanguage.json"
EXAMPLES = sorted((REPO / "examples").glob("*.astral"))
STDLIB = sorted((REPO / "stdlib").glob("*.astral"))


# ---- a TextMate driver ---------------------------------------------------------------------------
class Rule:
    def __init__(self, raw: dict, grammar: "Grammar"):
        self.raw = raw
        self.grammar = grammar
        self.name = raw.get("name")
        self.content_name = raw.get("contentName")
        self.match = re.compile(raw["match"]) if "match" in raw else None
        self.begin = re.compile(raw["begin"]) if "begin" in raw else None
        self.end_source = raw.get("end")
        self.captures = raw.get("captures", {})
        self.begin_captures = raw.get("beginCaptures", raw.get("captures", {}))
        self.end_captures = raw.get("endCaptures", raw.get("captures", {}))
        self.apply_end_last = bool(raw.get("applyEndPatternLast"))
        self._patterns: Optional[List["Rule"]] = None

    @property
    def patterns(self) -> List["Rule"]:
        if self._patterns is None:
            self._patterns = self.grammar.expand(self.raw.get("patterns", []))
        return self._patterns


class Grammar:
    def __init__(self, data: dict):
        self.data = data
        self.scope = data["scopeName"]
        self.repository = {k: v for k, v in data.get("repository", {}).items()}
        self._rules: Dict[int, Rule] = {}
        self.top = self.expand(data["patterns"])

    def rule(self, raw: dict) -> Rule:
        key = id(raw)
        if key not in self._rules:
            self._rules[key] = Rule(raw, self)
        return self._rules[key]

    def expand(self, patterns: List[dict], seen=None) -> List[Rule]:
        """Patterns with `include`s (and rules holding only patterns) flattened, in order."""
        seen = set() if seen is None else seen
        out: List[Rule] = []
        for p in patterns:
            if "include" in p:
                ref = p["include"]
                if ref == "$self" or ref == "$base":
                    target = {"patterns": self.data["patterns"]}
                elif ref.startswith("#"):
                    target = self.repository[ref[1:]]
                else:
                    raise AssertionError(f"external include {ref} is not supported here")
                if id(target) in seen:
                    continue
                out.extend(self.expand([target], seen | {id(target)}))
            elif "match" in p or "begin" in p:
                out.append(self.rule(p))
            elif "patterns" in p:
                out.extend(self.expand(p["patterns"], seen))
        return out


class Frame:
    def __init__(self, rule: Optional[Rule], scopes: Tuple[str, ...], end: Optional[re.Pattern]):
        self.rule = rule
        self.scopes = scopes
        self.end = end


def _assign(scopes: List[List[str]], start: int, end: int, extra: List[str]) -> None:
    for i in range(start, end):
        scopes[i] = scopes[i] + extra


def _captures(line_scopes, m: re.Match, captures: dict) -> None:
    for key, spec in captures.items():
        group = int(key)
        if group > (m.re.groups or 0) or m.start(group) < 0:
            continue
        if spec.get("name"):
            _assign(line_scopes, m.start(group), m.end(group), [spec["name"]])


def tokenize(grammar: Grammar, text: str) -> List[List[List[str]]]:
    """The scopes of every character of every line (outermost first)."""
    stack = [Frame(None, (grammar.scope,), None)]
    out = []
    for line in text.split("\n"):
        scopes: List[List[str]] = [[] for _ in line]
        pos = 0
        for _ in range(10_000):
            frame = stack[-1]
            patterns = frame.rule.patterns if frame.rule is not None else grammar.top
            best = None                       # (start, priority, rule or "end", match)
            if frame.end is not None:
                m = frame.end.search(line, pos)
                if m is not None:
                    best = (m.start(), 10**6 if frame.rule.apply_end_last else -1, "end", m)
            for order, rule in enumerate(patterns):
                m = (rule.match or rule.begin).search(line, pos)
                if m is not None and (best is None or (m.start(), order) < best[:2]):
                    best = (m.start(), order, rule, m)
            base = list(frame.scopes)
            if best is None:
                for i in range(pos, len(line)):
                    scopes[i] = base + scopes[i]
                break
            start, _, what, m = best
            for i in range(pos, start):
                scopes[i] = base + scopes[i]
            if what == "end":
                rule = frame.rule
                outer = base[:-1] if rule.content_name else base
                for i in range(m.start(), m.end()):
                    scopes[i] = outer + scopes[i]
                _captures(scopes, m, rule.end_captures)
                stack.pop()
                pos = m.end()
                continue                      # an empty end (`$`) still closes its rule
            if m.end() == m.start():          # an empty match: no progress, stop this line
                for i in range(pos, len(line)):
                    scopes[i] = base + scopes[i]
                break
            if what.match is not None:
                for i in range(m.start(), m.end()):
                    scopes[i] = base + ([what.name] if what.name else []) + scopes[i]
                _captures(scopes, m, what.captures)
            else:
                inner = tuple(base + ([what.name] if what.name else []))
                for i in range(m.start(), m.end()):
                    scopes[i] = list(inner) + scopes[i]
                _captures(scopes, m, what.begin_captures)
                stack.append(Frame(what, inner + ((what.content_name,) if what.content_name
                                                  else ()), re.compile(what.end_source)))
            pos = m.end()
        else:
            raise AssertionError(f"the grammar does not progress on {line!r}")
        out.append(scopes)
    return out


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar(json.loads(GRAMMAR_PATH.read_text(encoding="utf-8")))


def _names(data) -> set:
    out = set()
    if isinstance(data, dict):
        for k, v in data.items():
            if k in ("name", "contentName") and isinstance(v, str):
                out.add(v)
            else:
                out |= _names(v)
    elif isinstance(data, list):
        for v in data:
            out |= _names(v)
    return out


def _doc_snippets(lang: str) -> List[Tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_docs import BLOCKS

    return [(b.id, b.text) for b in BLOCKS if b.lang == lang]


def _corpus(errors: bool = False) -> List[Tuple[str, str]]:
    """Valid .astral text: the examples, the stdlib and the docs' ```astral snippets (with
    `errors`, also the ```astral-error snippets, which hold deliberate mistakes)."""
    out = [(p.name, p.read_text(encoding="utf-8")) for p in EXAMPLES + STDLIB]
    out += _doc_snippets("astral")
    if errors:
        out += _doc_snippets("astral-error")
    return out


# Token classes of the language -> the scope that marks them.
TOKEN_CLASSES = {
    "line comment": "comment.line.double-slash.astral",
    "block comment": None,                 # no example has one (checked on the docs below)
    "string": "string.quoted.double.astral",
    "number": "constant.numeric.astral",
    "unit of a quantity": "keyword.other.unit.astral",
    "import": "keyword.control.import.astral",
    "module path": "entity.name.namespace.astral",
    "param / let": "storage.type.astral",
    "parameter or let name": "variable.other.definition.astral",
    "kind": "storage.type.kind.astral",
    "declaration name": "entity.name.type.astral",
    "field": "variable.other.property.astral",
    "keyword argument / template parameter": "variable.parameter.astral",
    "type annotation": "support.type.astral",
    "statement keyword": "keyword.control.astral",
    "severity": "support.constant.severity.astral",
    "word operator (x, to, and, or, not)": "keyword.operator.word.astral",
    "comparison": "keyword.operator.comparison.astral",
    "arithmetic": "keyword.operator.arithmetic.astral",
    "assignment": "keyword.operator.assignment.astral",
    "range": "keyword.operator.range.astral",
    "constant (true, false, ?)": "constant.language.astral",
    "built-in function": "support.function.builtin.astral",
    "template instantiation": "entity.name.function.astral",
    "record block": "entity.name.section.astral",
    "braces": "punctuation.section.braces.astral",
    "brackets": "punctuation.section.brackets.astral",
    "parentheses": "punctuation.section.parens.astral",
    "separator": "punctuation.separator.astral",
    "member access": "punctuation.accessor.astral",
    "name": "variable.other.astral",
}


@pytest.fixture(scope="module")
def scoped(grammar) -> Dict[str, List[List[List[str]]]]:
    """text -> its scopes (tokenize) for every text of the corpus with its mistakes, each
    tokenized once for the four tests below that read them (the examples had been tokenized
    four times, the stdlib and the docs' snippets three: 0.9 s of CPU more)."""
    return {text: tokenize(grammar, text) for _, text in _corpus(errors=True)}


def test_every_token_class_appears_in_the_examples(scoped):
    seen = set()
    for path in EXAMPLES:
        for line in scoped[path.read_text(encoding="utf-8")]:
            for scopes in line:
                seen.update(scopes)
    missing = {k: v for k, v in TOKEN_CLASSES.items() if v is not None and v not in seen}
    assert not missing, f"token classes not found in examples/: {missing}"


def test_no_line_of_an_example_is_left_unscoped(scoped):
    """Every non-blank character of valid code gets a scope of its own, and none is marked
    invalid (the grammar marks characters that are not .astral as invalid.illegal)."""
    problems = []
    for name, text in _corpus():
        for n, (line, scopes) in enumerate(zip(text.split("\n"), scoped[text]), 1):
            bare = [i for i, ch in enumerate(line) if not ch.isspace() and
                    (len(scopes[i]) < 2 or any(s.startswith("invalid.") for s in scopes[i]))]
            if bare:
                problems.append(f"{name}:{n}: unscoped {line[bare[0]:bare[0] + 20]!r} in "
                                f"{line.strip()!r} ({scopes[bare[0]]})")
    assert not problems, "\n".join(problems[:20])


def test_mistakes_are_scoped_too(grammar, scoped):
    """In the docs' error examples every character still gets a scope; a `#` comment or a
    single-quoted string is marked invalid."""
    for name, text in _corpus(errors=True):
        for n, (line, scopes) in enumerate(zip(text.split("\n"), scoped[text]), 1):
            bare = [i for i, ch in enumerate(line) if not ch.isspace() and len(scopes[i]) < 2]
            assert not bare, f"{name}:{n}: {line!r}"
    s = tokenize(grammar, "# not a comment")[0]
    assert "invalid.illegal.character.astral" in s[0]


def test_every_scope_of_the_grammar_is_used(grammar, scoped):
    """Each scope the grammar names marks something in the examples, stdlib or docs."""
    seen = set()
    for _, text in _corpus(errors=True):
        for line in scoped[text]:
            for scopes in line:
                seen.update(scopes)
    unused = _names([grammar.data["patterns"], grammar.data["repository"]]) - seen
    assert not unused, f"scopes never used: {sorted(unused)}"


def _lark_keywords() -> set:
    text = (REPO / "grammar" / "astral.lark").read_text(encoding="utf-8")
    text = re.sub(r"//[^\n]*", "", text)
    return set(re.findall(r'"([a-z]+)"', text))


def test_every_keyword_of_the_lark_grammar_is_highlighted(grammar):
    keywords = _lark_keywords()
    assert {"import", "param", "let", "check", "x", "to", "if", "for"} <= keywords
    for word in sorted(keywords):
        scopes = tokenize(grammar, f"{word}")[0]
        top = {s for s in scopes[0]}
        assert any(s.startswith(("keyword.", "storage.", "constant.language"))
                   for s in top), f"`{word}` is not highlighted as a keyword: {top}"


# the words a unit may not be: the compiler's `_UNIT_ATOM`, the editor's quantity and `to UNIT`
_LARK_NOT_UNITS = re.compile(r"^_UNIT_ATOM: /\(\?!\(([a-z|]+)\)\\b\)", re.M)
_TM_NOT_UNITS = re.compile(r"\(\?!\(\?:([a-z|]+)\)\\\\b\)\[A-Za-z")


def test_no_keyword_is_a_unit_in_either_grammar(grammar):
    # docs/language.md 2.5: `x` and the keywords are never units, so a statement may follow a
    # bare number (`let a = 4 allow W100 "..."`); `allow` and `as` were missing from the
    # compiler's list, and the editor's held only `x` to `of`: `4 let` showed as a quantity
    lark_text = (REPO / "grammar" / "astral.lark").read_text(encoding="utf-8")
    lark_excluded = set(_LARK_NOT_UNITS.search(lark_text).group(1).split("|"))
    assert lark_excluded == _lark_keywords()
    raw = GRAMMAR_PATH.read_text(encoding="utf-8")
    lists = [set(m.group(1).split("|")) for m in _TM_NOT_UNITS.finditer(raw)]
    assert len(lists) == 2 and all(ex == lark_excluded for ex in lists), lists
    for word in ("let", "allow", "check"):
        scopes = _at(tokenize(grammar, f"a = 4 {word} b")[0], f"a = 4 {word} b", word)
        assert not any("unit" in s for s in scopes), (word, scopes)


def test_every_kind_and_builtin_is_known_to_the_grammar(grammar):
    for kind in KINDS:
        scopes = tokenize(grammar, f"{kind} Thing {{ }}")[0]
        assert "storage.type.kind.astral" in scopes[0], kind
        assert "entity.name.type.astral" in scopes[len(kind) + 1], kind
    for fn in BUILTINS:
        scopes = tokenize(grammar, f"check {fn}(racks)")[0]
        assert "support.function.builtin.astral" in scopes[len("check ")], fn


def _at(scopes, line: str, text: str, nth: int = 0) -> List[str]:
    i = -1
    for _ in range(nth + 1):
        i = line.index(text, i + 1)
    return scopes[i]


def test_scopes_of_typical_lines(grammar):
    line = "  hosts = hosts_per_rack x Node     // 4 x 10.2 kW = 40.8 kW"
    s = tokenize(grammar, line)[0]
    assert "variable.other.property.astral" in _at(s, line, "hosts")
    assert "keyword.operator.word.astral" in s[line.index(" x ") + 1]
    assert "comment.line.double-slash.astral" in _at(s, line, "// 4")
    line = "param rack_limit = 45 kW            // busway"
    s = tokenize(grammar, line)[0]
    assert "storage.type.astral" in _at(s, line, "param")
    assert "variable.other.definition.astral" in _at(s, line, "rack_limit")
    assert "constant.numeric.astral" in _at(s, line, "45")
    assert "keyword.other.unit.astral" in _at(s, line, "kW")
    line = "  down = 128 x 200 Gb/s, up = 64 x 400 Gb/s"
    s = tokenize(grammar, line)[0]
    assert "constant.numeric.astral" in _at(s, line, "128")
    assert "keyword.operator.word.astral" in _at(s, line, "x")
    assert "keyword.other.unit.astral" in _at(s, line, "Gb/s", 1)
    line = "  check power to BTU/h > 100000 BTU/h"
    s = tokenize(grammar, line)[0]
    assert "keyword.operator.word.astral" in _at(s, line, "to")
    assert "keyword.other.unit.astral" in _at(s, line, "BTU/h")
    line = "host Node = HGX8(gpu = H800, nic = CX7_2x200G) {"
    s = tokenize(grammar, line)[0]
    assert "storage.type.kind.astral" in _at(s, line, "host")
    assert "entity.name.type.astral" in _at(s, line, "Node")
    assert "entity.name.function.astral" in _at(s, line, "HGX8")
    assert "variable.parameter.astral" in _at(s, line, "gpu")
    assert "variable.other.astral" in _at(s, line, "CX7_2x200G")
    line = "  racks = [Row(slot = i) for i in 0..8]"
    s = tokenize(grammar, line)[0]
    assert "keyword.operator.range.astral" in _at(s, line, "..")
    assert "constant.numeric.astral" in _at(s, line, "8")
    assert "keyword.control.astral" in _at(s, line, "for")
    text = 'let a = "x \\" y" /* a\nblock */ let b = 2'
    lines = tokenize(grammar, text)
    assert "constant.character.escape.astral" in lines[0][text.index("\\")]
    assert "comment.block.astral" in lines[1][0]
    assert "storage.type.astral" in lines[1][len("block */ ")]
