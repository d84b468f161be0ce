"""attrs classes that are cheaper to create: `frozen` and `define` are attrs' own, but the repr,
the equality and the hash are shared functions instead of code attrs generates and compiles for
each class.

`astral check` built about 170 classes at every start (about 130 since the syntax tree's nodes
are plain classes, syntax/ast.py), and compiling the methods attrs generates for them was a good
part of its start-up: 142 kB of generated source, 72 kB once repr, equality and hash are shared,
and 1,261 -> 1,104 million instructions for a warm check of the reference
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

A frozen record made a few times in a run (an analysis's result, a Seer cluster's GPU, the design
itself) is declared `frozen(slots=False)`: attrs then patches the class it is given instead of
building a second class with `__slots__` (a warm check of the reference: 920 -> 910 million
instructions for 39 such classes); its instances keep their fields in a `__dict__`, which only
costs memory when there are many of them. Records made per node, per instance, per host or per
operation (spans, syntax nodes, diagnostics, quantities, frames, Seer's job specs...) keep
their slots."""
from __future__ import annotations

import reprlib
from operator import attrgetter

import attrs

from astral_dsl import methodcache

_EQUALITY_OPTIONS = ("eq", "order", "hash", "unsafe_hash", "cache_hash")


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
            with methodcache.caching():      # attrs' generated methods: their byte code kept
                built = make(cls, **({"repr": False} if shared_repr else {}),
                             **({"eq": False} if shared_eq else {}), **options)
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


frozen = _maker(attrs.frozen, True)
define = _maker(attrs.define, False)

__all__ = ["define", "frozen"]
