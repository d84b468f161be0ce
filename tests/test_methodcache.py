"""methodcache.py: the byte code of attrs' generated methods, kept beside the package's, is used
only for the very source attrs compiles, and is written as Python writes .pyc files."""
from __future__ import annotations

import builtins
import linecache
import marshal
import os
import sys

import attrs
import pytest

from astral_dsl import methodcache, records


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache file of its own, the module as in a new process, compiles counted."""
    where = tmp_path / "__pycache__" / "attrs-methods.bin"
    where.parent.mkdir()
    monkeypatch.setattr(methodcache, "path", lambda: str(where))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compiled = []

    def counting(source, filename, mode, *args, **kwargs):
        compiled.append(filename)
        return builtins.compile(source, filename, mode, *args, **kwargs)

    monkeypatch.setattr(methodcache, "compile", counting, raising=False)
    _restart(monkeypatch)
    return where, compiled, monkeypatch


def _restart(monkeypatch):
    """The module's state (and attrs' file names: linecache) as a new process finds it."""
    monkeypatch.setattr(linecache, "cache", {})
    monkeypatch.setattr(methodcache, "_entries", None)
    monkeypatch.setattr(methodcache, "_new", {})
    monkeypatch.setattr(methodcache, "_used", set())


def _record(more: bool = False):
    """A record; `more`: with another field (another generated source)."""
    if more:
        @records.frozen
        class Cached:
            a: int
            b: str = attrs.field(default="x", repr=False)
            c: int = 0
            d: int = 1
    else:
        @records.frozen
        class Cached:
            a: int
            b: str = attrs.field(default="x", repr=False)
            c: int = 0
    return Cached


def test_a_record_built_again_takes_its_methods_from_the_file(cache):
    where, compiled, monkeypatch = cache
    first = _record()
    assert len(compiled) == 1 and not where.exists()
    assert methodcache.write() and where.exists()
    _restart(monkeypatch)
    again = _record()
    assert len(compiled) == 1                       # nothing compiled: the file had it
    assert again(1) == again(1, "x", 0) and repr(again(2)) == "Cached(a=2, c=0)"
    with pytest.raises(TypeError):
        again()
    kept, made = again.__init__.__code__, first.__init__.__code__
    assert (kept.co_code, kept.co_consts, kept.co_names, kept.co_varnames, kept.co_filename,
            kept.co_firstlineno) == (made.co_code, made.co_consts, made.co_names,
                                     made.co_varnames, made.co_filename, made.co_firstlineno)
    assert not methodcache.write()                  # nothing new: nothing written


def test_a_changed_record_is_compiled_and_its_entry_replaced(cache):
    where, compiled, monkeypatch = cache
    _record()
    methodcache.write()
    _restart(monkeypatch)
    assert _record(more=True)(0).d == 1             # another field: another source
    assert len(compiled) == 2
    assert methodcache.write()
    entries = marshal.loads(where.read_bytes()[len(methodcache.TAG) + 4:])
    assert len(entries) == 1 and "d = 1" not in next(iter(entries.values()))[0] \
        and ", d=attr_dict['d'].default" in next(iter(entries.values()))[0]
    _restart(monkeypatch)
    _record(more=True)
    assert len(compiled) == 2


@pytest.mark.parametrize("damage", ["header", "truncated", "writable", "not marshal"])
def test_a_file_that_does_not_read_is_not_used(cache, damage):
    where, compiled, monkeypatch = cache
    _record()
    methodcache.write()
    data = where.read_bytes()
    if damage == "header":
        where.write_bytes(b"x" + data[1:])
    elif damage == "truncated":
        where.write_bytes(data[:len(data) // 2])
    elif damage == "writable":
        os.chmod(where, 0o666)
    else:
        where.write_bytes(data[:len(methodcache.TAG) + 4] + b"\xff" * 40)
    _restart(monkeypatch)
    assert _record()(3).a == 3
    assert len(compiled) == 2


def test_nothing_is_written_where_byte_code_is_not(cache):
    where, compiled, monkeypatch = cache
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _record()
    assert not methodcache.write() and not where.exists()


def test_attrs_compiles_through_the_cache():
    """If a later attrs compiled its generated source otherwise, nothing would be cached (and
    start-up would lose ~50 million instructions): this says so."""
    seen = []
    original = methodcache._compile

    def spy(source, filename, mode, *args, **kwargs):
        seen.append(filename)
        return original(source, filename, mode, *args, **kwargs)

    methodcache._compile, saved = spy, methodcache._compile
    try:
        _record()
    finally:
        methodcache._compile = saved
    assert any("Cached" in name for name in seen)
    assert "compile" not in vars(sys.modules["attr._make"])     # the built-in again after
