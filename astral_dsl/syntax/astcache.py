"""Syntax trees of the stdlib's modules, cached per user (usercache: JSON, never a pickle).

Every compile of a design that imports the stdlib parses its modules again, and parsing is most
of a small compile's time (~60 ms of CPU for the reference's five stdlib imports). The stdlib
ships with the package and does not change, so its trees are kept: an entry is the tree as
JSON, keyed by the module's text, the grammar, the Lark version and the source of the AST and
of its builder, so that any change to one of them parses afresh. An entry is data: it can only
name the node classes of syntax/ast.py, and anything malformed is parsed again.

The user's own files (in a process that has Lark imported already, only those of SMALL_TREE
characters or more: semantics/modules.py worth_caching, a shorter one parses in about the time
its entry is read back) are cached the same way once they parse
without an error (`cached` and `store`: a file with syntax errors is always parsed, its errors
recovered): `astral check` in a
loop, CI on an unchanged design and the editor on reopening skip Lark's parse (~100 ms for the
reference). Their entries are bounded: the newest USER_ENTRIES are kept, whatever the files'
names, so a test suite or a fuzzer that writes thousands of files leaves no more than that."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from astral_dsl import resources, usercache
from astral_dsl.diagnostics import span_at
from astral_dsl.syntax import ast, lazy
from astral_dsl.syntax.source import Source

_CLASSES = {name: cls for name, cls in vars(ast).items()
            if isinstance(cls, type) and issubclass(cls, ast.Node) and cls is not ast.Node}


@lru_cache(maxsize=1)
def _version() -> str:
    """What a cached tree depends on besides the module's text: the grammar, Lark's version,
    the source of the AST and of what builds it, and this module's, which writes and reads the
    entries (read as text: a tree from the cache needs neither Lark nor the builders imported)."""
    here = Path(__file__).parent
    parts = [resources.grammar_text(), lark_version()]
    for name in ("ast.py", "build.py", "literals.py", "reduce.py", "astcache.py", "lazy.py"):
        parts.append((here / name).read_text(encoding="utf-8"))
    return usercache.key_digest(*parts)


_VERSION = re.compile(r"""^__version__\b[^=]*=\s*["']([^"']+)["']""", re.M)


def lark_version() -> str:
    """Lark's version, read from its package without importing it (start-up: `import lark`
    costs as much as the rest of a cached `astral check`)."""
    module = sys.modules.get("lark")
    if module is not None:
        return module.__version__
    spec = importlib.util.find_spec("lark")
    try:
        found = _VERSION.search(Path(spec.origin).read_text(encoding="utf-8"))
    except (AttributeError, TypeError, OSError, ValueError):
        found = None
    if found is None:
        import lark          # here: only when its version cannot be read from its source

        return lark.__version__
    return found.group(1)


# The stdlib's trees ship with the package (made by `python -m astral_dsl.syntax.astcache`): a
# first run, with an empty user cache, reads them instead of parsing the stdlib modules it
# imports. A line per module: its key (as the user cache's: the module's text, the grammar,
# Lark's version and the AST's sources) and its tree, whose top-level declarations are read on
# first use (syntax/lazy.py: a design uses few of them); a key that is not there is parsed.
SHIPPED = Path(__file__).with_name("stdlib_trees.txt")


# The shipped trees read in this process, by key and file: a tree is immutable (frozen nodes),
# so the compiles of one process (a test suite, a sweep's points, a language server's edits)
# share one instead of decoding the module again for each (1-3 ms a module)
_SHIPPED: dict = {}


def shipped(source: Source):
    """The tree of a stdlib module shipped with the package for exactly this text, grammar,
    Lark and AST, or None."""
    key = usercache.key_digest(_version(), source.text)
    tree = _SHIPPED.get((key, source.name))
    if tree is None:
        tree = _SHIPPED[key, source.name] = _read_shipped(key, source)
    return tree


def _read_shipped(key: str, source: Source):
    try:
        with open(SHIPPED, encoding="utf-8") as fh:
            for line in fh:
                head, _, rest = line.partition(" ")
                if head == key:
                    doc, _, bodies = rest.partition("\t")
                    tree = json.loads(doc, object_hook=_hook(source.name, (bodies, source)))
                    return tree if isinstance(tree, ast.Module) else None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return None


def write_shipped() -> int:
    """Write the trees of the stdlib's modules beside this module; how many."""
    from astral_dsl.syntax.parser import parse

    lines = [f"lark-{lark_version()} {_version()}"]
    for path in sorted(resources.stdlib_dir().glob("*.astral")):
        source = Source(path.name, path.read_text(encoding="utf-8"))
        key = usercache.key_digest(_version(), source.text)
        lines.append(key + " " + lazy.encode_shipped(parse(source), _encode))
    SHIPPED.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1


def parse_cached(source: Source, parse) -> ast.Module:
    """`parse(source)`, from the per-user cache when it holds this text's tree."""
    key = usercache.key_digest(_version(), source.text)
    name = f"ast-{Path(source.name).stem}-{key[:16]}"
    hit = usercache.read(name, key, _hook(source.name))
    if isinstance(hit, ast.Module):
        return hit
    tree = parse(source)
    if usercache.write(name, key, _encode(tree)):
        usercache.prune(f"ast-{Path(source.name).stem}-")
    return tree


USER_ENTRIES = 64
_USER = "astu-"


def _user_entry(key: str) -> str:
    return f"{_USER}{key[:32]}"


def cached(source: Source):
    """(the tree of a user's file from the cache when it holds this text's, else None; the
    entry to `store` it under)."""
    key = usercache.key_digest(_version(), source.text)
    hit = usercache.read(_user_entry(key), key, _hook(source.name))
    return (hit if isinstance(hit, ast.Module) else None), (key, len(source.text))


# From this many characters of text a tree is written by msgspec (a dependency already: its
# JSON, read back by json.loads, is the same document): json.dumps takes 0.26 s of CPU for the
# 5.5 MB of a 1 MB design's tree, msgspec 0.06 s, but importing it costs ~10 ms.
LARGE = 100_000


def store(entry, tree: ast.Module) -> None:
    """Keep the tree of a user's file that parsed without errors under its `cached` entry."""
    key, size = entry
    try:
        value = _encode(tree)
    except TypeError:
        return
    dumps = None
    if size >= LARGE:
        import msgspec.json

        dumps = msgspec.json.encode
    if usercache.write(_user_entry(key), key, value, dumps):
        usercache.prune(_USER, keep=USER_ENTRIES)


# An entry is the tree as JSON: a node is {"ClassName": [its fields' values, in order]}, a span
# [line, column, end line, end column] (its file is the one the tree is read as), a tuple a list,
# a string, number, boolean or None itself. How each field is written follows from its declared
# type in ast.py (its annotation, in the class's `_types`): "span", "tuple", "tuple?" (or None),
# "node" (or None when Optional) and "plain" (str, float, int, bool).
def _kind(annotation: str) -> str:
    if annotation == "Span":
        return "span"
    if annotation.startswith("Tuple["):
        return "tuple"
    if annotation.startswith("Optional[Tuple["):
        return "tuple?"
    if annotation in ("str", "float", "int", "bool"):
        return "plain"
    return "node?" if annotation.startswith("Optional[") else "node"


_FIELDS = {cls: tuple((name, _kind(cls._types[name])) for name in cls._fields)
           for cls in _CLASSES.values()}


class _Encoders(dict):
    """Per node class, the function that gives a node's entry (made on first use)."""

    def __missing__(self, kind):
        if not self and kind in _FIELDS:
            self.update(_generated_encoders(self))
            return self[kind]
        if kind is lazy.LazyDecl:                   # a shipped tree's: written as it reads
            return lambda n: self[ast.Decl](lazy.materialise(n))
        raise TypeError(f"cannot cache a {kind.__name__} in a syntax tree")


# how a field of each kind is written, as Python (`v` the field; E: the encoders, T: type)
_WRITE = {"span": "[{v}.start.line, {v}.start.column, {v}.end.line, {v}.end.column]",
          "plain": "{v}", "node": "E[T({v})]({v})",
          "node?": "None if {v} is None else E[T({v})]({v})",
          "tuple": "[E[T(x)](x) for x in {v}]",
          "tuple?": "None if {v} is None else [E[T(x)](x) for x in {v}]"}


def _generated_encoders(encoders) -> dict:
    """A function per node class, generated from its fields (as attrs generates __init__): the
    fields read and written in one expression, each span in place. A generic walk that asks
    each value its type took 0.21 s of CPU for the 143,000 nodes of a 1 MB design's tree, this
    0.11 s; it is made only when a tree is written (a check reading its trees needs none)."""
    lines = []
    for cls, fields in _FIELDS.items():
        values = ", ".join(_WRITE[kind].format(v=f"n.{name}") for name, kind in fields)
        lines.append(f"def {cls.__name__}(n):\n    return {{{cls.__name__!r}: [{values}]}}\n")
    space = {"E": encoders, "T": type}
    exec(compile("\n".join(lines), "<astcache encoders>", "exec"), space)
    return {cls: space[cls.__name__] for cls in _FIELDS}


_ENCODERS = _Encoders()


def _encode(tree) -> Any:
    """The entry of a syntax tree (raises TypeError for anything but the AST's nodes)."""
    return _ENCODERS[type(tree)](tree)


# per class name: the class, its number of fields, the indices of its spans, of its tuples and
# of its optional tuples
_DECODE = {cls.__name__: (cls, len(fields),
                          *(tuple(i for i, (_, k) in enumerate(fields) if k == kind)
                            for kind in ("span", "tuple", "tuple?")))
           for cls, fields in _FIELDS.items()}


def _hook(file: str, shipped=None):
    """json.loads' object hook that builds the tree of an entry, bottom up, its spans in `file`
    (a malformed entry raises, and usercache.read gives None). `shipped`: (the declarations'
    text, the source) of a shipped tree's line, whose top-level declarations are read lazily
    (syntax/lazy.py); any other entry holds none."""
    def hook(d: dict):
        name, f = d.popitem()          # KeyError when empty: not a tree either
        if d:
            raise ValueError("not a cached syntax tree")
        if name == lazy.LAZY and shipped is not None:
            return lazy.lazy_decl(f, file, shipped, hook)
        cls, count, spans, tuples, optional = _DECODE[name]
        if type(f) is not list or len(f) != count:
            raise ValueError("not a cached syntax tree")
        for i in spans:
            f[i] = span_at(file, *f[i])
        for i in tuples:
            f[i] = tuple(f[i])
        for i in optional:
            if f[i] is not None:
                f[i] = tuple(f[i])
        if cls is ast.Module:                  # its file is the one it is read as now
            f[0] = file
        return cls(*f)
    return hook


if __name__ == "__main__":         # python -m astral_dsl.syntax.astcache: the shipped trees
    print(f"{SHIPPED}: {write_shipped()} modules")
