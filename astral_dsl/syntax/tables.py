"""Lark parsers of the grammar, with their tables cached per user as plain data (usercache).

Building the LALR tables from grammar/astral.lark takes ~80 ms of CPU; loading them from the
cache a fraction of that. Lark serialises a parser into dicts, tuples, lists, strings, numbers
and booleans (the data its standalone generator writes as Python literals); it is stored as
tagged JSON and turned back into a parser with `Lark.load`, so a cache entry never runs code.
The key covers the grammar text, the Lark version and the options: any change builds afresh."""
from __future__ import annotations

from typing import Any

import lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from astral_dsl import resources, usercache


class _Corrupt(ValueError):
    pass


def build(name: str, **options) -> lark.Lark:
    """A Lark LALR parser of the grammar with `options`, from the per-user cache when it holds
    one for exactly this grammar, Lark version and options. The tree class is not part of the
    tables: it is given to the parser as it is loaded."""
    tree_class = options.pop("tree_class", None)
    runtime = {"tree_class": tree_class} if tree_class is not None else {}
    grammar = resources.grammar_text()
    key = usercache.key_digest(grammar, lark.__version__, repr(sorted(options.items())))
    cached = usercache.read(f"parser-{name}", key)
    if cached is not None:
        try:
            data = _decode(cached)
            return lark.Lark._load_from_dict(data["data"], data["memo"], **runtime)
        except Exception:  # noqa: BLE001 - a stale or damaged entry: build it again
            pass
    parser = lark.Lark(grammar, parser="lalr", **options, **runtime)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k != "tree_class"}
    usercache.write(f"parser-{name}", key, _encode({"data": data, "memo": memo}))
    return parser


def _encode(x: Any) -> Any:
    if isinstance(x, dict):
        return {"d": [[_encode(k), _encode(v)] for k, v in x.items()]}
    if isinstance(x, tuple):
        return {"t": [_encode(v) for v in x]}
    if isinstance(x, list):
        return [_encode(v) for v in x]
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise TypeError(f"cannot cache a {type(x).__name__}")


def _decode(x: Any) -> Any:
    if isinstance(x, list):
        return [_decode(v) for v in x]
    if isinstance(x, dict):
        if len(x) != 1:
            raise _Corrupt("bad tag")
        (tag, items), = x.items()
        if not isinstance(items, list):
            raise _Corrupt("bad items")
        if tag == "t":
            return tuple(_decode(v) for v in items)
        if tag == "d":
            out = {}
            for pair in items:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise _Corrupt("bad pair")
                k = _decode(pair[0])
                if isinstance(k, (list, dict)):
                    raise _Corrupt("bad key")
                out[k] = _decode(pair[1])
            return out
        raise _Corrupt("unknown tag")
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise _Corrupt("bad value")
