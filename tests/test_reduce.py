"""syntax/reduce.py builds the AST in the parser's reductions; Lark's own road (a parse tree,
then Builder) is the reference. Every .astral file of the repository, the invalid corpora
included, and texts that leave the fast road must give the same tree, spans included, or the
same diagnostic; the formatter's token tree must be the one Lark builds with keep_all_tokens."""
from __future__ import annotations

from pathlib import Path

import pytest
from lark import Token, Tree

from astral_dsl.diagnostics import DiagnosticError
from astral_dsl.syntax import astcache, larkroad, parser
from astral_dsl.syntax.source import Source

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for p in ROOT.rglob("*.astral") if ".git" not in p.parts)


_LARK: dict = {}


def lark_road(source: Source, start: str = "start"):
    """Lark's own road (which drive.SKIP_FROM does not touch): each text's result made once and
    kept for the tests that compare against it (they only read it)."""
    key = (source.name, source.text, start)
    if key not in _LARK:
        try:
            _LARK[key] = "tree", tree_of(larkroad.build(source.name, larkroad.run(source, start)))
        except DiagnosticError as exc:
            _LARK[key] = "error", exc.diagnostic
    return _LARK[key]


def fast_road(source: Source, start: str = "start"):
    try:
        node = larkroad.reduced(source, start, False)
    except DiagnosticError as exc:
        return "error", exc.diagnostic
    return ("tree", tree_of(node.value)) if node is not None else None


def tree_of(value):
    """Every node, field and span of a syntax tree (the AST cache's encoding), to compare."""
    return astcache._encode(value)


def sources():
    """Every .astral file of the repository that is UTF-8 text, as a Source."""
    for path in FILES:
        try:
            yield path, Source(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            continue


_SHAPES: dict = {}


def _lark_shape(text: str):
    """shape() of Lark's keep_all_tokens tree of `text`, made once a text (Lark's own parser:
    drive.SKIP_FROM does not touch it)."""
    if text not in _SHAPES:
        _SHAPES[text] = shape(larkroad.concrete_parser().parse(text))
    return _SHAPES[text]


def shape(tree):
    """A Lark tree as nested tuples: rule names, token types, texts and positions."""
    if isinstance(tree, Token):
        return (tree.type, str(tree), tree.line, tree.column, tree.end_line, tree.end_column)
    return (tree.data, tuple(shape(c) for c in tree.children))


def test_the_fast_road_is_taken():
    source = Source("x.astral", (ROOT / "examples" / "astral.astral").read_text())
    assert larkroad.reduced(source, "start", False) is not None


@pytest.fixture(params=[False, True], ids=["blanks-alone", "blanks-skipped"])
def skipping(request, monkeypatch):
    """Both of drive.py's ways to lex blanks: as tokens of their own (a small text) and with
    the token after them (a text of drive.SKIP_FROM characters or more)."""
    from astral_dsl.syntax import drive

    monkeypatch.setattr(drive, "SKIP_FROM", 0 if request.param else 1 << 60)
    return request.param


def test_every_file_of_the_repository_alike(skipping):
    assert len(FILES) > 150
    fast = 0
    for path, source in sources():
        mine = fast_road(source)
        if mine is None:                       # left to Lark's road: nothing to compare
            continue
        fast += 1
        assert mine == lark_road(source), path
    assert fast > 150


@pytest.mark.parametrize("text", [
    "",
    "// only a comment\n",
    "x = (1 + 2) * 3 kW",
    "x = ((a))",
    "host A { power = 700 W, }",
    "rack R { hosts = 4 x [A, B]; check power <= 45 kW else error \"too much\" }",
    "import stdlib.hardware { H800, } as hw",
    "param p: power = 10 kW,",
    "x = if a then b else c",
    "x = f(1, k = 2,)[*].y ^ -2",
    "x = [h.power for h in hosts]",
    "x = ? in 1..8",
    "minimize cost",
    "x = 1 to kW",
    "job J { parallel { tp = 8 } }",
    "x = 1e999",                       # E106 while building: Lark's road reports it
    "x = 1e-400 kW",                   # E106 too: below the smallest float
    "x = \"bad \\q escape\"",          # E107
    "x = 1e999 kW\ny = (",             # a syntax error after a build error: the syntax error
    "x = " + "(" * 300 + "1" + ")" * 300,   # nested too deeply (E402)
    "x = " + "-" * 250 + "1",
])
def test_texts_alike(text, skipping):
    source = Source("t.astral", text)
    mine = fast_road(source)
    if mine is not None:
        assert mine == lark_road(source)
    # the public entry point answers as Lark's road does, on either road
    try:
        got = ("tree", tree_of(parser.parse(source)))
    except DiagnosticError as exc:
        got = ("error", exc.diagnostic)
    assert got == lark_road(source)


@pytest.mark.parametrize("text", ["1 kW", "a.b[2] + f(x = 1)", "(1", "1e999"])
def test_expressions_alike(text):
    source = Source("<expr>", text)
    try:
        got = ("tree", tree_of(parser.parse_expression(source)))
    except DiagnosticError as exc:
        got = ("error", exc.diagnostic)
    assert got == lark_road(source, "expr_only")


def test_the_concrete_tree_is_lark_keep_all_tokens_tree(skipping):
    """On the files the formatter is run on most: the examples, the stdlib and the fixtures."""
    compared = 0
    for path, source in sources():
        if path.relative_to(ROOT).parts[0] not in ("examples", "stdlib") and \
                "fixtures" not in path.parts:
            continue
        try:
            module, concrete = parser.parse_concrete(source)
        except DiagnosticError:
            continue
        assert tree_of(module) == lark_road(source)[1], path
        assert shape(concrete) == _lark_shape(source.text), path
        assert isinstance(concrete, Tree)
        compared += 1
    assert compared > 15
