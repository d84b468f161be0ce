"""The compiler's LALR tables ship with the package (syntax/tables.txt, made by `python -m
astral_dsl.syntax.tables`): a first run loads them instead of building them from the grammar.
They must be the tables of the grammar as it is (else they are never used: a grammar changed
without remaking them), and parse as tables built from the grammar do."""
from __future__ import annotations

import astral_dsl

from pathlib import Path

import lark
import pytest

from astral_dsl import resources, usercache
from astral_dsl.syntax import tables
from astral_dsl.syntax.larkroad import OPTIONS

ROOT = Path(__file__).resolve().parents[1]


def shipped_head():
    key, version = tables.SHIPPED.read_text(encoding="utf-8").split("\n", 1)[0].split()
    return key, version


def current_key() -> str:
    return usercache.key_digest(tables._FORMAT, resources.grammar_text(), lark.__version__,
                                repr(sorted(dict(OPTIONS).items())))


def test_the_shipped_tables_are_those_of_the_grammar_as_it_is():
    key, version = shipped_head()
    assert version.startswith("lark-")
    if version == f"lark-{lark.__version__}":
        assert key == current_key(), "grammar changed: run python -m astral_dsl.syntax.tables"
    else:                                       # another Lark: never used, built instead
        assert tables._shipped(tables.SHIPPED_NAME, current_key()) is None


def test_a_first_run_loads_the_shipped_tables(tmp_path, monkeypatch):
    if shipped_head()[1] != f"lark-{lark.__version__}":
        pytest.fail("the shipped tables were made with another Lark: remake them "
                    "(python -m astral_dsl.syntax.tables)")
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "empty"))

    class NoBuild(lark.Lark):
        def __init__(self, *args, **kwargs):
            raise AssertionError("the tables were built from the grammar")

    monkeypatch.setattr(tables.lark, "Lark", NoBuild)
    parser = tables.build("compiler", **dict(OPTIONS))
    assert parser.parse("host A { power = 700 W }", start="start").data == "start"


def shape(tree):
    if tree is None:                            # an absent [optional] (maybe_placeholders)
        return None
    if isinstance(tree, lark.Token):
        return (tree.type, str(tree), tree.line, tree.column, tree.end_line, tree.end_column)
    return (tree.data, tuple(shape(c) for c in tree.children))


def test_shipped_tables_parse_as_tables_built_from_the_grammar(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTRAL_CACHE_DIR", "off")
    entry = tables._shipped(tables.SHIPPED_NAME, current_key())
    if entry is None:
        pytest.fail("the shipped tables do not serve this grammar and Lark")
    loaded = lark.Lark._load_from_dict(entry["data"], entry["memo"], tree_class=lark.Tree)
    built = lark.Lark(resources.grammar_text(), parser="lalr", **dict(OPTIONS))
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.astral"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted(resources.stdlib_dir().glob("*.astral"))]
    assert len(texts) > 8
    for text in texts:
        assert shape(loaded.parse(text, start="start")) == shape(built.parse(text, start="start"))
    for bad in ("host A { power = }", "x = (1", "rack R { hosts = 4 x }"):
        errors = []
        for parser in (loaded, built):
            try:
                parser.parse(bad, start="start")
            except lark.exceptions.UnexpectedInput as exc:
                errors.append((type(exc).__name__, exc.line, exc.column,
                               sorted(getattr(exc, "expected", ()) or ())))
        assert len(errors) == 2 and errors[0] == errors[1], bad


# ---- the stdlib's syntax trees ship too (syntax/stdlib_trees.txt) -------------------------------
def test_the_shipped_stdlib_trees_are_those_of_the_stdlib_as_it_is():
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.parser import parse
    from astral_dsl.syntax.source import Source

    head = astcache.SHIPPED.read_text(encoding="utf-8").split("\n", 1)[0].split()
    assert head[0] == f"lark-{lark.__version__}", \
        "made with another Lark: run python -m astral_dsl.syntax.astcache"
    modules = sorted(resources.stdlib_dir().glob("*.astral"))
    assert len(modules) >= 5
    for path in modules:
        source = Source(str(path), path.read_text(encoding="utf-8"))
        tree = astcache.shipped(source)
        assert tree is not None, f"{path.name} changed (or the grammar, or the AST's sources): " \
                                 "run python -m astral_dsl.syntax.astcache"
        assert astcache._encode(tree) == astcache._encode(parse(source))
        assert tree.file == str(path) and tree.items[0].span.file == str(path)


def test_a_first_check_parses_no_stdlib_module(tmp_path, monkeypatch):
    from astral_dsl.syntax import parser

    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(tmp_path / "empty"))
    parsed = []
    real = parser.parse
    monkeypatch.setattr(parser, "parse", lambda s: parsed.append(s.name) or real(s))
    design = astral_dsl.load(ROOT / "examples" / "astral.astral")
    assert design.valid and len(design.instances) > 30
    assert not any("stdlib" in name for name in parsed), parsed


def test_a_stdlib_text_not_shipped_is_parsed(tmp_path):
    from astral_dsl.syntax import astcache
    from astral_dsl.syntax.source import Source

    text = (resources.stdlib_dir() / "cooling.astral").read_text(encoding="utf-8")
    assert astcache.shipped(Source("cooling.astral", text + "\n// edited\n")) is None
