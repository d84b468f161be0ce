"""The top-level declarations of a shipped stdlib tree, read on first use.

A design uses a few of the declarations of each stdlib module it imports (the reference 17 of
the 84 in its five imports), but reading a module's shipped tree built every node of every
declaration. So a line of syntax/stdlib_trees.txt (written by astcache) keeps its module's
top-level declarations apart: in the module's entry a declaration is its kind, name and span and
where the rest of it (params, base, body, renamed) lies in the line's second part, after a tab.
Reading the tree makes each a LazyDecl: an ast.Decl whose other four fields are read when one of
them is first asked for, after which it is a plain ast.Decl (the same slots, its class changed),
read like any node, the tree node for node the one an eager read gives. A declaration whose text
does not read (a damaged file) is taken from a parse of its module, as a damaged line is."""
from __future__ import annotations

import json
from _thread import allocate_lock

from astral_dsl.diagnostics import span_at
from astral_dsl.syntax import ast

# a shipped line's lazy declaration: {"Decl~": [kind, name, span, start, end]}, its other fields
# the JSON list of bodies[start:end] (not a class name: no other entry has it)
LAZY = "Decl~"
_FIELDS = ast.Decl._fields
_EAGER = ("kind", "name", "span")
_LATER = tuple(f for f in _FIELDS if f not in _EAGER)          # params, base, body, renamed
# how a field read later is made: a list becomes a tuple (None stays where it is Optional)
_TUPLES = tuple((ast.Decl._types[f].startswith(("Tuple[", "Optional[Tuple[")),
                 ast.Decl._types[f].startswith("Optional[")) for f in _LATER)
_SLOT = {f: ast.Decl.__dict__[f] for f in _FIELDS}             # the slots' own descriptors
_RAW = _SLOT["body"]          # a LazyDecl's body slot holds where the rest of it is, until read
_LOCK = allocate_lock()       # one thread reads a declaration (the language server's workers)


def materialise(decl):
    """The declaration with all its fields read (a LazyDecl becomes a plain ast.Decl)."""
    with _LOCK:
        if type(decl) is LazyDecl:
            bodies, start, end, hook, source = _RAW.__get__(decl)
            try:
                values = _read(bodies[start:end], hook)
            except (ValueError, KeyError, TypeError, RecursionError):
                values = _parsed(decl, source)
            for name, value in zip(_LATER, values):
                _SLOT[name].__set__(decl, value)
            object.__setattr__(decl, "__class__", ast.Decl)
    return decl


def _read(text: str, hook) -> list:
    values = json.loads(text, object_hook=hook)
    if type(values) is not list or len(values) != len(_LATER):
        raise ValueError("not a cached declaration")
    for i, (tupled, optional) in enumerate(_TUPLES):
        if tupled and not (optional and values[i] is None):
            values[i] = tuple(values[i])
    return values


def _parsed(decl, source) -> tuple:
    """The fields of the declaration at the same span in a parse of its module."""
    from astral_dsl.syntax.parser import parse     # here: only for a damaged shipped line

    for item in parse(source).items:
        if isinstance(item, ast.Decl) and item.span == _SLOT["span"].__get__(decl):
            return tuple(getattr(item, f) for f in _LATER)
    raise ValueError(f"{source.name}: no declaration at {decl.span}")


def _later(name: str):
    return property(lambda self: getattr(materialise(self), name))


class LazyDecl(ast.Decl):
    """A shipped tree's top-level declaration, the fields but its kind, name and span read on
    first use (then a plain ast.Decl)."""
    params = _later("params")
    base = _later("base")
    body = _later("body")
    renamed = _later("renamed")

    def __repr__(self) -> str:
        return repr(materialise(self))

    def __reduce_ex__(self, protocol):
        return materialise(self).__reduce_ex__(protocol)


def lazy_decl(fields, file: str, shipped, hook) -> LazyDecl:
    """The LazyDecl of an entry's fields [kind, name, span, start, end] (already decoded by
    `hook`, bottom up, but the span), in a line whose (declarations' text, source) is
    `shipped`."""
    if type(fields) is not list or len(fields) != 5:
        raise ValueError("not a cached syntax tree")
    kind, name, span, start, end = fields
    if type(start) is not int or type(end) is not int:
        raise ValueError("not a cached syntax tree")
    decl = object.__new__(LazyDecl)
    _SLOT["kind"].__set__(decl, kind)
    _SLOT["name"].__set__(decl, name)
    _SLOT["span"].__set__(decl, span_at(file, *span))
    _RAW.__set__(decl, (shipped[0], start, end, hook, shipped[1]))
    return decl


def encode_shipped(tree: ast.Module, encode) -> str:
    """A shipped line's text after its key: the module's entry (`encode`'s, each top-level
    declaration a lazy one), a tab, and the lazy declarations' other fields one after another
    (compact JSON holds no tab)."""
    entry = encode(tree)
    items = entry["Module"][ast.Module._fields.index("items")]
    later, at = [], 0
    for i, node in enumerate(tree.items):
        if type(node) is ast.Decl:
            f = dict(zip(_FIELDS, items[i]["Decl"]))
            text = _dumps([f[name] for name in _LATER])
            items[i] = {LAZY: [*(f[name] for name in _EAGER), at, at + len(text)]}
            later.append(text)
            at += len(text)
    return _dumps(entry) + "\t" + "".join(later)


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))
