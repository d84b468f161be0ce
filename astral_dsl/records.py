"""attrs classes that are cheaper to create: `frozen` and `define` are attrs' own, but the repr is
one shared function instead of code attrs generates and compiles for each class.

`astral` builds about a hundred classes at every start, and compiling their generated methods is
a good part of its start-up (`benchmarks/bench_startup.py`); the repr is the largest of them and
the one only a debugger or a failing test reads. The shared repr prints what attrs' would
(`Name(field=value, ...)`, fields declared with `repr=False` left out, `...` for an object met
again inside itself); a class that defines its own `__repr__` keeps it."""
from __future__ import annotations

import reprlib

import attrs


@reprlib.recursive_repr()
def _repr(self) -> str:
    name = type(self).__qualname__.rsplit(">.", 1)[-1]
    return f"{name}(" + ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                                   for f in attrs.fields(type(self)) if f.repr) + ")"


def _maker(make):
    def decorator(maybe_cls=None, **options):
        def build(cls):
            if "__repr__" in cls.__dict__:
                return make(cls, **options)
            built = make(cls, repr=False, **options)
            built.__repr__ = _repr
            return built
        return build(maybe_cls) if maybe_cls is not None else build
    return decorator


frozen = _maker(attrs.frozen)
define = _maker(attrs.define)

__all__ = ["define", "frozen"]
