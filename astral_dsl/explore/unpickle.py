"""What a Dask client here accepts from its cluster: plain data, never an object.

Dask's protocol carries pickles: a task's result, a remote function's answer (the version
probe), a task's exception and traceback, a worker's warning, and any message part a peer
marks `__Pickled__`, which distributed.protocol.core.loads unpickles before looking at it. A
pickle names functions to call while it is read (`os.system`, `builtins.exec`, ...), so any
peer of the cluster (a worker that joined it, a scheduler on the address given) could run code
in the client. TLS with the cluster's certificates (cluster.py) says who the peers are; this
module makes sure that even an authenticated peer, or any peer of a loopback or
`--insecure-cluster` connection, sends the client data and nothing else.

While a DaskEngine is open, every pickle the client reads through Dask is read by a restricted
unpickler (the Python documentation's "Restricting Globals", made stricter): it builds the plain
values a pickle encodes with opcodes of their own (numbers, strings, bytes, tuples, lists,
dicts, sets, None, booleans); it refuses every opcode that calls something (REDUCE, BUILD,
INST, OBJ, NEWOBJ, NEWOBJ_EX, persistent ids), so nothing at all is called while a pickle is
read; and it names only the plain types (ALLOWED), which Dask names when it records a result's
type, as values. Anything else stops the read with RefusedPickle. A pickle can then cost no
more memory than its own size, and checking that a result is plain data (`plain`) no more time:
each object is walked once, and a result of more than MAX_NODES values as a tree is refused
(memo references had made 194 bytes a tree of 2^31 values). The rows and forecasts the
workers return are plain data (point.py, search/work.py), so nothing the work needs is refused;
a refused task result or error costs its chunk (E800), a refused version probe refuses the
cluster (engines.py). The pure-Python unpickler of the standard library (pickle._Unpickler)
reads them: its opcodes are a table this module can restrict, and the client's pickles are
small (rows and figures).

Dask reads pickles through two module globals, both replaced while an engine is open:
`distributed.protocol.pickle.pickle` (behind distributed.protocol.pickle.loads, which the
protocol, the serializers and the client call) and `distributed.client.pickle` (the client's
warning handler). The replacement is process-wide: a Dask scheduler or worker in the same
process would be restricted too (the tests run their clusters in other processes)."""
from __future__ import annotations

import importlib
import io
import pickle
import threading
import types
from typing import Any, FrozenSet, Tuple

# the plain types: named as values (a result's type), never called (the calls are refused)
ALLOWED: FrozenSet[Tuple[str, str]] = frozenset(
    ("builtins", n) for n in ("bool", "int", "float", "complex", "str", "bytes", "bytearray",
                              "list", "tuple", "dict", "set", "frozenset"))


class RefusedPickle(pickle.UnpicklingError, TypeError):
    """A pickle from the cluster holds something other than plain data. (A TypeError too: Dask
    reads a remote traceback with `except (TypeError, AttributeError)` and then goes on without
    it.)"""


def _refuse_call(self) -> None:
    raise RefusedPickle("refused a pickle from the Dask cluster that calls something while it "
                        "is read: the client accepts plain data only")


_CALLS = (pickle.REDUCE, pickle.BUILD, pickle.INST, pickle.OBJ, pickle.NEWOBJ, pickle.NEWOBJ_EX,
          pickle.PERSID, pickle.BINPERSID)


class _Restricted(pickle._Unpickler):
    dispatch = dict(pickle._Unpickler.dispatch)
    for _op in _CALLS:
        dispatch[_op[0]] = _refuse_call
    del _op

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise RefusedPickle(f"refused a pickled `{module}.{name}` from the Dask cluster: "
                                "the client accepts plain data only")
        return getattr(importlib.import_module(module), name)


def loads(data, *, buffers=(), **_ignored) -> Any:
    """pickle.loads, restricted to plain data (module docstring)."""
    return _Restricted(io.BytesIO(data), buffers=buffers or None).load()


class _Facade(types.ModuleType):
    """The pickle module as Dask's modules see it while an engine is open: everything is the
    standard library's, except that loads is restricted."""

    def __init__(self):
        super().__init__("pickle")
        self.loads = loads
        self.Unpickler = _Restricted

    def __getattr__(self, name: str) -> Any:
        return getattr(pickle, name)


_FACADE = _Facade()
_LOCK = threading.Lock()
_OPEN = [0]
_PLACES = (("distributed.protocol.pickle", "pickle"), ("distributed.client", "pickle"))


class GuardError(Exception):
    """This version of Dask reads pickles where the guard cannot reach."""


def install() -> None:
    """Restrict Dask's unpickling in this process until the matching uninstall()."""
    with _LOCK:
        modules = []
        for name, attr in _PLACES:
            module = importlib.import_module(name)
            now = getattr(module, attr, None)
            if now is not pickle and now is not _FACADE:
                raise GuardError(f"{name}.{attr} is not the pickle module: this version of "
                                 "distributed is not one astral_dsl knows how to guard")
            modules.append((module, attr))
        for module, attr in modules:
            setattr(module, attr, _FACADE)
        _OPEN[0] += 1


def uninstall() -> None:
    with _LOCK:
        _OPEN[0] = max(0, _OPEN[0] - 1)
        if _OPEN[0]:
            return
        for name, attr in _PLACES:
            module = importlib.import_module(name)
            if getattr(module, attr, None) is _FACADE:
                setattr(module, attr, pickle)


def installed() -> bool:
    return _OPEN[0] > 0


MAX_NODES = 1 << 24     # values in a result, each shared one counted where it is used again


class _NotPlain(Exception):
    pass


def plain(value: Any) -> bool:
    """Whether `value` is plain data (what a worker's result must be), at most 64 deep and of
    at most MAX_NODES values counted as a tree. A pickle's memo lets one list stand in many
    places: 194 bytes made a list of two references to a list of two references ... 30 deep,
    2^31 values as a tree, which a walk of the tree never finished (nor would the rows'
    JSON). Each object is walked once, its count kept by its id (every one is alive, held by
    `value`), and one that holds itself is refused."""
    try:
        return _count(value, 0, {}) <= MAX_NODES
    except _NotPlain:
        return False


def _count(value: Any, depth: int, seen: dict) -> int:
    """The values of `value` as a tree (itself included); _NotPlain when it is not plain data,
    too deep, larger than MAX_NODES or holds itself."""
    if depth > 64:
        raise _NotPlain
    kind = type(value)
    if value is None or kind in (bool, int, float, str, bytes):
        return 1
    if kind not in (list, tuple, dict):
        raise _NotPlain
    key = id(value)
    if key in seen:
        if seen[key] < 0:            # still being counted: it holds itself
            raise _NotPlain
        return seen[key]
    seen[key] = -1
    total = 1
    for item in (value.values() if kind is dict else value):
        total += _count(item, depth + 1, seen)
        if total > MAX_NODES:
            raise _NotPlain
    if kind is dict and not all(type(k) in (str, int) for k in value):
        raise _NotPlain
    seen[key] = total
    return total
