"""The compiler's LALR tables ship with the package (syntax/tables.txt, made by `python -m
astral_dsl.syntax.tables`): a first run loads them instead of building them from the grammar.
They must be the tables of the grammar as it is (else they are never used: a grammar changed
without remaking them), and parse as tables built from the grammar do."""
from __future__ import annotations

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
