"""Lark parsers of the grammar, with their tables cached per user as plain data (usercache).

Building the LALR tables from grammar/astral.lark takes ~80 ms of CPU; loading them from the
cache a fraction of that. Lark serialises a parser into dicts, tuples, lists, strings, numbers
and booleans (the data its standalone generator writes as Python literals); it is stored as
tagged JSON and turned back into a parser with `Lark.load`, so a cache entry never runs code.
The key covers the grammar text, the Lark version and the options: any change builds afresh, in
an entry of its own (the four newest per parser are kept)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from astral_dsl import resources, usercache


class _Corrupt(ValueError):
    pass


_FORMAT = "tables 2"     # the encoding below (part of the key: an older entry is rebuilt)


def build(name: str, **options) -> lark.Lark:
    """A Lark LALR parser of the grammar with `options`, from the per-user cache when it holds
    one for exactly this grammar, Lark version and options. The tree class is not part of the
    tables: it is given to the parser as it is loaded."""
    tree_class = options.pop("tree_class", None)
    runtime = {"tree_class": tree_class} if tree_class is not None else {}
    grammar = resources.grammar_text()
    key = usercache.key_digest(_FORMAT, grammar, lark.__version__, repr(sorted(options.items())))
    # the entry's name carries its key: checkouts of different grammars (or Lark versions) keep
    # an entry each instead of rebuilding and overwriting one another's
    entry = f"parser-{name}-{key[:16]}"
    cached = usercache.read(entry, key, _hook)
    if cached is None:
        cached = _shipped(name, key)
    if cached is not None:
        try:
            return lark.Lark._load_from_dict(cached["data"], cached["memo"], **runtime)
        except Exception:  # noqa: BLE001 - a stale or damaged entry: build it again
            pass
    parser = lark.Lark(grammar, parser="lalr", **options, **runtime)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k != "tree_class"}
    if usercache.write(entry, key, _encode({"data": data, "memo": memo})):
        usercache.prune(f"parser-{name}-")
    return parser


# The compiler's tables ship with the package (made by `python -m astral_dsl.syntax.tables`):
# a first run, with an empty user cache, loads them instead of building them from the grammar
# (100-150 ms of CPU, a third of that run). They serve only the grammar, Lark version and
# options they were made for (their key, on the first line); any other builds afresh.
SHIPPED = Path(__file__).with_name("tables.txt")
SHIPPED_NAME = "compiler"


def _shipped(name: str, key: str):
    if name != SHIPPED_NAME:
        return None
    try:
        with open(SHIPPED, "rb") as fh:
            head = fh.readline().split()
            if not head or head[0].decode("ascii", "replace") != key:
                return None
            return json.loads(fh.read(), object_hook=_hook)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def write_shipped(options: dict) -> str:
    """Write the compiler's tables for `options` (larkroad's) beside this module; their key."""
    grammar = resources.grammar_text()
    key = usercache.key_digest(_FORMAT, grammar, lark.__version__, repr(sorted(options.items())))
    parser = lark.Lark(grammar, parser="lalr", **options)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k != "tree_class"}
    payload = json.dumps(_encode({"data": data, "memo": memo}), separators=(",", ":"))
    SHIPPED.write_text(f"{key} lark-{lark.__version__}\n{payload}\n", encoding="utf-8")
    return key


def _encode(x: Any) -> Any:
    if isinstance(x, dict):        # keys, then values: rebuilt with dict(zip(...)), in C
        return {"d": [[_encode(k) for k in x], [_encode(v) for v in x.values()]]}
    if isinstance(x, tuple):
        return {"t": [_encode(v) for v in x]}
    if isinstance(x, list):
        return [_encode(v) for v in x]
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise TypeError(f"cannot cache a {type(x).__name__}")


def _hook(x: dict) -> Any:
    """json.loads' object hook for an entry: each tagged object, innermost first, becomes the
    tuple or dict it stands for (in C-driven callbacks: no walk of the whole document)."""
    if len(x) != 1:
        raise _Corrupt("bad tag")
    (tag, items), = x.items()
    if not isinstance(items, list):
        raise _Corrupt("bad items")
    if tag == "t":
        return tuple(items)
    if tag == "d":
        if len(items) != 2 or not isinstance(items[0], list) or \
                not isinstance(items[1], list) or len(items[0]) != len(items[1]):
            raise _Corrupt("bad mapping")
        return dict(zip(items[0], items[1]))        # an unhashable key: TypeError, rebuilt
    raise _Corrupt("unknown tag")


if __name__ == "__main__":          # python -m astral_dsl.syntax.tables: the shipped tables
    from astral_dsl.syntax.larkroad import OPTIONS

    print(f"{SHIPPED}: {write_shipped(dict(OPTIONS))}")
