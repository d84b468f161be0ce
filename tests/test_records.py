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


# ---- attrs' generated code compiled ahead (records_code.py) -------------------------------------
def _package_sources() -> dict:
    """The sources attrs generated for the package's classes in this process (every module
    imported: as `python -m astral_dsl.records` does)."""
    import importlib
    import pkgutil

    import astral_dsl

    for info in pkgutil.walk_packages(astral_dsl.__path__, "astral_dsl."):
        if info.name != "astral_dsl.records_code":
            importlib.import_module(info.name)
    return records.package_sources()


def _fields(code):
    """Everything a code object is made of (its functions' too): compared in full."""
    from types import CodeType

    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_name, code.co_qualname, code.co_filename,
            code.co_firstlineno, code.co_linetable, code.co_exceptiontable, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount, code.co_stacksize,
            list(code.co_positions()),
            tuple(_fields(c) if isinstance(c, CodeType) else c for c in code.co_consts))


def test_the_code_compiled_ahead_is_what_compile_gives():
    """Each source of records_code.py gives, moved to attrs' file name, the very functions
    compile() makes of it (positions included: a traceback through them is unchanged)."""
    from types import CodeType

    sources = _package_sources()
    shipped = records._shipped()
    assert shipped, "records_code.py unread (its byte code missing and not writable?)"
    compared = 0
    for key, source in sources.items():
        if key not in shipped:
            continue
        filename = f"<attrs generated methods test.{key}>"
        want = compile(source, filename, "exec")    # with the flags attrs' module passes
        got = records.relocated(*shipped[key], filename)
        assert [_fields(c) for c in got.co_consts if isinstance(c, CodeType)] == \
            [_fields(c) for c in want.co_consts if isinstance(c, CodeType)], source
        compared += 1
    assert compared > 150


def test_records_code_holds_the_package_classes():
    head = records.CODE.read_text(encoding="utf-8").split("\n", 1)[0]
    if f"(attrs {attrs.__version__})" not in head:
        pytest.skip("records_code.py was written with another attrs: its sources are not met")
    missing = set(_package_sources()) - set(records._shipped())
    assert not missing, f"{len(missing)} class(es) changed: run python -m astral_dsl.records"


def test_a_class_built_from_code_compiled_ahead_behaves(monkeypatch):
    """A class of the shape of syntax.ast.Ident, whose source ships: its __init__ comes from
    records_code.py and behaves as compiled; a damaged entry falls back to compile()."""
    used = []
    real = records.relocated
    monkeypatch.setattr(records, "relocated", lambda *a: used.append(a[2]) or real(*a))

    def ident():
        @records.frozen(eq=False, weakref_slot=False, match_args=False)
        class Ident:
            name: str
            span: object

        return Ident

    Ident = ident()
    assert used and used[-1].startswith("<attrs generated") and used[-1].endswith("Ident>")
    assert Ident("x", None).name == "x"
    assert Ident.__init__.__code__.co_filename == used[-1]
    with pytest.raises(TypeError, match=r"\.Ident\.__init__\(\) missing 1 required positional "
                                        "argument: 'span'$"):
        Ident("x")

    key = records.key(next(s for s, _ in records._sources.values()
                           if s.startswith("def __init__(self, name, span):")))
    body, mark = records._shipped()[key]
    monkeypatch.setitem(records._shipped(), key, (body, mark + " 00"))  # a line table too many
    used.clear()
    Again = ident()
    assert used and Again("y", 1).span == 1


def test_records_code_is_read_from_byte_code_only(tmp_path, monkeypatch):
    """Without byte code, and none to be written, records_code.py is not compiled (the classes
    are, one by one: cheaper); with it, it is read as an import reads a module."""
    copy = tmp_path / "records_code.py"
    copy.write_text(records.CODE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(records, "CODE", copy)
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert records._module_code() is None
    monkeypatch.setattr("sys.dont_write_bytecode", False)
    code = records._module_code()
    assert code is not None and list((tmp_path / "__pycache__").glob("records_code.*.pyc"))
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert records._module_code() is not None                 # its byte code is there now
    copy.write_text(copy.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # then stale
    assert records._module_code() is None
