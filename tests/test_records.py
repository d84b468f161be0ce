"""records.frozen / records.define: attrs classes whose repr, equality and hash are shared
functions; they behave as attrs' generated ones (compared here with classes attrs builds)."""
from __future__ import annotations

import math
from typing import Tuple

import attrs
import pytest

from astral_dsl import records


@records.frozen
class Point:
    x: float
    y: float
    label: str = attrs.field(default="", eq=False)


@attrs.frozen
class AttrsPoint:
    x: float
    y: float
    label: str = attrs.field(default="", eq=False)


@records.frozen
class Other:
    x: float
    y: float
    label: str = ""


@records.define
class Box:
    items: list = attrs.field(factory=list)


@records.frozen
class Empty:
    pass


@records.frozen
class One:
    value: float


@records.frozen(order=True)
class Ordered:
    a: int
    b: Tuple[int, ...] = ()


def test_equality_is_by_class_and_compared_fields():
    assert Point(1.0, 2.0, "a") == Point(1.0, 2.0, "b")          # label has eq=False
    assert Point(1.0, 2.0) != Point(1.0, 3.0)
    assert Point(1.0, 2.0) != Other(1.0, 2.0)                      # another class: not equal
    assert Point(1.0, 2.0).__eq__(Other(1.0, 2.0)) is NotImplemented
    assert Empty() == Empty() and Box([1]) == Box([1]) and Box([1]) != Box([2])


def test_fields_compare_one_by_one_as_attrs_compares_them():
    nan = math.nan
    assert (One(nan) == One(nan)) is (AttrsPoint(nan, 0.0) == AttrsPoint(nan, 0.0)) is False
    assert (Point(1.0, 2.0) == Point(1.0, 2.0)) is True


def test_hash_follows_equality_and_mutable_records_are_unhashable():
    assert hash(Point(1.0, 2.0, "a")) == hash(Point(1.0, 2.0, "b"))
    assert {Point(1.0, 2.0): 1}[Point(1.0, 2.0)] == 1
    assert hash(Empty()) == hash(Empty())
    with pytest.raises(TypeError):
        hash(Box())


def test_repr_matches_attrs():
    assert repr(Point(1.0, 2.0, "a")) == repr(AttrsPoint(1.0, 2.0, "a")).replace("AttrsPoint",
                                                                               "Point")
    box = Box()
    box.items.append(box)
    assert repr(box) == "Box(items=[...])"


def test_options_about_equality_keep_attrs_methods():
    assert Ordered(1, (2,)) < Ordered(1, (3,)) and Ordered(2) > Ordered(1, (9,))
    assert Ordered(1) == Ordered(1) and hash(Ordered(1)) == hash(Ordered(1))


def test_frozen_records_stay_frozen_and_evolve():
    p = Point(1.0, 2.0)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.x = 3.0
    assert attrs.evolve(p, x=3.0) == Point(3.0, 2.0)
