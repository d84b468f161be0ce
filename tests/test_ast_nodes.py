"""The syntax tree's node classes (syntax/ast.py: plain classes with __slots__, not attrs): what
the rest of the package relies on, as it did when they were frozen attrs classes with eq=False:
fields in order with trailing defaults, set once, identity equality and hash, the same repr,
and copies and pickles that keep every field."""
from __future__ import annotations

import copy
import pickle

import attrs
import pytest

from astral_dsl.diagnostics import Span
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse
from astral_dsl.syntax.source import Source

SPAN = Span.at("f.astral", 1, 1, 1, 4)


def test_fields_are_given_in_order_and_the_last_may_default():
    i = ast.Ident("abc", SPAN)
    assert (i.name, i.span) == ("abc", SPAN)
    assert ast.Ident._fields == ("name", "span")
    f = ast.Field(i, ast.Number(1.0, "1", SPAN), SPAN)
    assert f.body is None                                    # its default
    d = ast.Decl(i, i, None, None, None, SPAN)
    assert d.renamed == ()
    with pytest.raises(TypeError):
        ast.Ident("abc")                                     # a field left out
    with pytest.raises(TypeError):
        ast.Ident("abc", SPAN, "extra")


def test_a_node_is_immutable():
    i = ast.Ident("abc", SPAN)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        i.name = "x"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del i.name
    with pytest.raises(AttributeError):
        i.__dict__                                           # noqa: B018 - slots only


def test_nodes_compare_and_hash_by_identity():
    a, b = ast.Ident("abc", SPAN), ast.Ident("abc", SPAN)
    assert a == a and a != b
    assert len({a, b}) == 2


def test_repr_names_every_field():
    assert repr(ast.Ident("abc", SPAN)) == f"Ident(name='abc', span={SPAN!r})"


def test_a_parsed_tree_survives_copy_and_pickle():
    text = 'param n = 4\nrack R { hosts = n x Node, note = "a" }\n'
    module = parse(Source("f.astral", text))
    for clone in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        assert type(clone) is ast.Module and clone is not module
        assert repr(clone) == repr(module)
        assert [type(n).__name__ for n in ast.walk(clone)] == \
            [type(n).__name__ for n in ast.walk(module)]


def test_a_subclass_lists_its_defaults_last():
    # class Bad(ast.Node): a: int = 1; b: int
    with pytest.raises(TypeError):
        type(ast.Node)("Bad", (ast.Node,), {"__annotations__": {"a": "int", "b": "int"},
                                            "a": 1})
    ok = type(ast.Node)("Ok", (ast.Node,), {"__annotations__": {"a": "int", "b": "int"}, "b": 2})
    assert (ok(1).a, ok(1).b, ok(1, 3).b) == (1, 2, 3)
