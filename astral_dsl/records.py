"""attrs classes that are cheaper to create: `frozen` and `define` are attrs' own, but the repr,
the equality and the hash are shared functions instead of code attrs generates and compiles for
each class.

`astral check` builds about 170 classes at every start, and compiling the methods attrs generates
for them was a good part of its start-up: 142 kB of generated source, 72 kB once repr, equality
and hash are shared, and 1,261 -> 1,104 million instructions for a warm check of the reference
(valgrind's count, deterministic, against 322 million for `import lark`; benchmarks/
bench_startup.py measures CPU time). What attrs still generates is `__init__`, the one method
whose speed matters and whose shape differs per class. The shared methods behave as attrs' own:

- the repr prints `Name(field=value, ...)`, fields declared with `repr=False` left out, `...` for
  an object met again inside itself;
- equality is attrs' `self.a == other.a and self.b == other.b ...` over the fields with
  `eq=True`, between instances of the very same class; another class gives NotImplemented;
- a frozen class hashes the tuple of its hashed fields with a salt of its own; a mutable one is
  unhashable, as attrs makes it.

A class that defines its own `__repr__`, `__eq__` or `__hash__`, or passes options about
equality, ordering or hashing (`eq=`, `order=`, `hash=`, `unsafe_hash=`, `cache_hash=`), gets
attrs' generated methods for those, unchanged.

What attrs compiles for a class (its `__init__`) comes compiled ahead when it can: the source of
the code attrs generates for the package's classes ships as class bodies in records_code.py
(written by `python -m astral_dsl.records`), a module never run, whose byte code Python caches
as any module's. While a class is built here, attrs' `compile` looks the source up there (by
its BLAKE2 digest) and takes the body's code, moved to attrs' file name and lines: its functions
are the very ones `compile` makes, positions included (tests/test_records.py compares them all).
Any other source is compiled as before, and so are all when records_code.py has no byte code
and none may be written. Compiling was more than half of building a class (~0.2 of ~0.37 ms);
a warm `astral check` of the reference builds about 170 classes: 1,047 -> 975 million
instructions, reading records_code.py's byte code (265 kB) included."""
from __future__ import annotations

import builtins
import reprlib
import sys
from operator import attrgetter
from pathlib import Path
from types import CodeType
from typing import Optional

import attr._make as _attrs_make
import attrs

try:
    from _blake2 import blake2b
except ImportError:                 # a Python without it: hashlib's (OpenSSL's)
    from hashlib import blake2b

_EQUALITY_OPTIONS = ("eq", "order", "hash", "unsafe_hash", "cache_hash")
# attrs' module calls the builtin `compile` (a name of its own there would be left alone)
_HOOKABLE = "compile" not in vars(_attrs_make)


@reprlib.recursive_repr()
def _repr(self) -> str:
    name = type(self).__qualname__.rsplit(">.", 1)[-1]
    return f"{name}(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                                   for f in attrs.fields(type(self)) if f.repr) + ")"


def _values(names):
    """A function of an instance giving the tuple of the named fields' values."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        name = names[0]
        return lambda self: (getattr(self, name),)
    return attrgetter(*names)


def _equality(cls, hashable: bool) -> None:
    """Shared `__eq__` and `__hash__` on a class built with eq=False."""
    fields = attrs.fields(cls)
    compared = tuple(f.name for f in fields if f.eq)

    def __eq__(self, other):
        # attrs' generated method: `self.a == other.a and self.b == other.b ...`
        if other.__class__ is not self.__class__:
            return NotImplemented
        result = True
        for name in compared:
            result = getattr(self, name) == getattr(other, name)
            if not result:
                return result
        return result

    cls.__eq__ = __eq__
    if not hashable:
        cls.__hash__ = None
        return
    hashed = _values(tuple(f.name for f in fields
                           if (f.hash if f.hash is not None else f.eq)))
    salt = hash(f"{cls.__module__}.{cls.__qualname__}")

    def __hash__(self):
        return hash((salt, hashed(self)))

    cls.__hash__ = __hash__


def _shares_equality(cls, options) -> bool:
    return not any(option in options for option in _EQUALITY_OPTIONS) and not any(
        name in cls.__dict__ for name in ("__eq__", "__ne__", "__hash__"))


def _maker(make, frozen_by_default: bool):
    def decorator(maybe_cls=None, **options):
        def build(cls):
            shared_eq = _shares_equality(cls, options)
            shared_repr = "__repr__" not in cls.__dict__ and "repr" not in options
            if _HOOKABLE:
                _attrs_make.compile = _compile          # for start-up: see the docstring
            try:
                built = make(cls, **({"repr": False} if shared_repr else {}),
                             **({"eq": False} if shared_eq else {}), **options)
            finally:
                if _HOOKABLE:
                    _attrs_make.__dict__.pop("compile", None)
            if shared_eq and any(f.eq_key is not None for f in attrs.fields(built)):
                raise TypeError(f"{cls.__qualname__}: a field with an `eq` key wants attrs' own "
                                "equality: declare the class with attrs.frozen/define")
            if shared_repr:
                built.__repr__ = _repr
            if shared_eq:
                _equality(built, options.get("frozen", frozen_by_default))
            return built
        return build(maybe_cls) if maybe_cls is not None else build
    return decorator


# ---- attrs' generated code, compiled ahead ----------------------------------------------------
CODE = Path(__file__).with_name("records_code.py")
MARK = "attrs code "     # a body's docstring in records_code.py: MARK, its key, its line tables

_bodies: Optional[dict] = None  # key -> (the class body of that source, its docstring)
_sources: dict = {}             # key -> (source, file name) of every class built here


def key(source: str) -> str:
    return blake2b(source.encode("utf-8"), digest_size=16).hexdigest()


def _compile(source, filename, mode, *args, **kwargs):
    """attrs' `compile` while a class is built here: the code of a source compiled ahead, else
    the builtin's."""
    if mode == "exec" and not args and not kwargs and type(source) is str:
        digest = key(source)
        _sources[digest] = source, filename   # (attrs keeps the source too, in linecache)
        found = _shipped().get(digest)
        if found is not None:
            try:
                return relocated(*found, filename)
            except (StopIteration, ValueError):       # a damaged records_code.py
                pass
    return builtins.compile(source, filename, mode, *args, **kwargs)


def _shipped() -> dict:
    global _bodies
    if _bodies is None:
        _bodies = {}
        code = _module_code()
        for body in (code.co_consts if code is not None else ()):
            mark = next((c for c in body.co_consts if type(c) is str and c.startswith(MARK)),
                        None) if isinstance(body, CodeType) else None
            if mark is not None:
                _bodies[mark.split()[2]] = (body, mark)
    return _bodies


def _module_code():
    """The code of records_code.py from its cached byte code, as an import would read it; None
    when there is no byte code for its present source and none may be written (compiling the
    module at every start would cost more than compiling the classes one by one)."""
    from importlib.machinery import SourceFileLoader

    try:
        if sys.dont_write_bytecode and not _byte_code_current():
            return None
        return SourceFileLoader("astral_dsl.records_code", str(CODE)).get_code(
            "astral_dsl.records_code")
    except (OSError, ImportError, SyntaxError, ValueError, EOFError):
        return None


def _byte_code_current() -> bool:
    """Whether records_code.py's cached byte code is there and made of its present source (for
    a byte code checked by timestamp: its source's time and size; one checked by hash is taken
    as current, the loader checks it)."""
    from importlib.util import MAGIC_NUMBER, cache_from_source

    try:
        with open(cache_from_source(str(CODE)), "rb") as fh:
            head = fh.read(16)
        st = CODE.stat()
    except OSError:
        return False
    if len(head) < 16 or head[:4] != MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") != 0:        # checked (or not) by hash
        return True
    return (int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


def _functions(code: CodeType):
    """The code objects within `code` (its functions, theirs...), depth first."""
    for c in code.co_consts:
        if isinstance(c, CodeType):
            yield c
            yield from _functions(c)


def relocated(body: CodeType, mark: str, filename: str) -> CodeType:
    """The class body `body` of records_code.py with the functions `compile(source, filename,
    "exec")` makes of its source: the source's line n is the body's line n + 1 (the `class`
    line and the docstring before it), and the functions' line tables (where the columns of
    their positions are), indented in records_code.py, are those `mark` carries. The body
    itself also sets `__module__`, `__qualname__` and `__doc__` in attrs' locals (attrs takes
    only the functions it asked for), and its own positions are those of records_code.py."""
    shift = body.co_firstlineno + 1
    prefix = body.co_name + "."
    tables = iter(mark.split()[3:])

    def moved(code: CodeType) -> CodeType:
        return code.replace(co_filename=filename, co_firstlineno=code.co_firstlineno - shift,
                            co_qualname=code.co_qualname.removeprefix(prefix),
                            co_linetable=bytes.fromhex(next(tables)),
                            co_consts=tuple([moved(c) if isinstance(c, CodeType) else c
                                             for c in code.co_consts]))

    code = body.replace(co_filename=filename, co_consts=tuple(
        [moved(c) if isinstance(c, CodeType) else c for c in body.co_consts]))
    if next(tables, None) is not None:
        raise ValueError("more line tables than functions")
    return code


def package_sources() -> dict:
    """key -> source of the package's classes built so far whose source can be met again:
    attrs' own __hash__ (of a class with options about equality) hashes a salt that is the
    hash of a str, another in every process."""
    return {k: source for k, (source, filename) in _sources.items()
            if " astral_dsl." in filename and "def __hash__" not in source}


def write_code() -> int:
    """Write records_code.py: the sources attrs generates for the classes built here by the
    package's modules (all imported); how many."""
    import importlib
    import pkgutil

    import astral_dsl

    global _bodies
    _bodies = {}                                 # every source compiled, not read from the file
    for info in pkgutil.walk_packages(astral_dsl.__path__, "astral_dsl."):
        if info.name != "astral_dsl.records_code":
            importlib.import_module(info.name)
    sources = package_sources()
    lines = ['"""Generated by `python -m astral_dsl.records` (attrs ' + attrs.__version__
             + '): never run; see records.py."""',
             "from __future__ import annotations  # as attrs' module, whose flags compile() "
             "inherits", "",
             'if __name__ == "not a module":', "    pass"]
    for k in sorted(sources):
        # the functions' line tables as compile() makes them of the source (not indented)
        tables = " ".join(c.co_linetable.hex()
                          for c in _functions(builtins.compile(sources[k], "", "exec")))
        # `_`: a class name Python does not mangle the source's `__x` names with
        lines += ["    class _:", f'        "{MARK}{k} {tables}"'.rstrip()]
        lines += ["        " + line if line.strip() else "" for line in
                  sources[k].split("\n")]
    CODE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(sources)


frozen = _maker(attrs.frozen, True)
define = _maker(attrs.define, False)

__all__ = ["define", "frozen"]

if __name__ == "__main__":          # python -m astral_dsl.records: records_code.py
    from astral_dsl import records   # the module the package's classes use, not this __main__

    print(f"{CODE}: {records.write_code()} sources")
