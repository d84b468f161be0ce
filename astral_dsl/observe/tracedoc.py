"""A profiler trace document reduced to the fields and the events the trace reader uses.

`decode` parses a trace's bytes with msgspec against this schema, one event at a time: every
other field (a real Kineto kernel carries a dozen more arguments: grid, blocks, registers,
occupancy, external id, ...; CPU ops carry call stacks and input shapes) is skipped without
building a Python object, and every event the reader does not use (`kept`) is dropped as soon
as it is decoded. Every field is typed `Any`, so a value of an unexpected type is kept and
judged by the reader (kineto.py), as a full parse would give it; an event the schema does not
fit (not an object, arguments that are not an object) is decoded as plain JSON and brought to
the schema's shape. A document msgspec does not take (not JSON of a trace's shape, a NaN, a
number past a double's range) decodes to None: the caller parses it in full with `parse`
(json.loads, its events kept as they are parsed), and `from_dict` brings a full parse to the
same shape, so every way meets at one reader. A field given as `null` counts as absent."""
from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Any, List, Optional

import msgspec

from astral_dsl.observe import jsoncount

# the arguments read, JSON key -> attribute: a kernel's launch correlation and device, and what
# PyTorch records on an NCCL kernel (its collective, process group and point-to-point peer); the
# correlation and the device come first (kernels.py keys an NCCL kernel by the fields after them)
ARG_KEYS = (("correlation", "correlation"), ("device", "device"),
            ("Collective name", "collective"), ("Process Group Name", "pg_name"),
            ("Process Group Description", "pg_desc"), ("Process Group Ranks", "pg_ranks"),
            ("Dst Rank", "dst_rank"), ("dst_rank", "dst_rank_"), ("dst", "dst"),
            ("Src Rank", "src_rank"), ("src_rank", "src_rank_"), ("src", "src"),
            ("Peer", "peer"), ("peer", "peer_"))
# an NCCL kernel's partner rank: the argument keys tried in order, per collective
PEER_ATTRS = {"send": ("dst_rank", "dst_rank_", "dst", "peer", "peer_"),
              "recv": ("src_rank", "src_rank_", "src", "peer", "peer_")}

Args = msgspec.defstruct(
    "Args", [(attr, Any, msgspec.field(default=None, name=key)) for key, attr in ARG_KEYS],
    frozen=True, gc=False)
# gc=False: decoded JSON holds no reference cycles, so the garbage collector need not track the
# thousands of events of a trace (cheaper to build)


class Event(msgspec.Struct, frozen=True, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    ts: Any = None
    dur: Any = None
    args: Args = msgspec.field(default_factory=Args)     # type: ignore[valid-type]


class TraceDoc(msgspec.Struct, frozen=True):
    traceEvents: List[Event]
    distributedInfo: Any = None
    deviceProperties: Any = None


# A trace's budget: the elements of its event array (each costs msgspec a view of 56 bytes, or
# the full parse a step of its scanner, before it is known whether it is an event) and the events
# kept of them (about 300 to 700 bytes each as decoded). A real trace at load.MAX_BYTES holds
# about 5 million events (215 bytes each, docs/diagnose.md), fewer than half of them kept.
MAX_EVENTS = 10_000_000
MAX_KEPT = 4_000_000


class TooManyEvents(Exception):
    """A trace past its budget (MAX_EVENTS, MAX_KEPT): the message says which."""


def _too_many(kept_: bool) -> TooManyEvents:
    return TooManyEvents(f"more than {MAX_KEPT:,} GPU kernels, memory copies, launches and "
                         f"ProfilerStep annotations" if kept_ else
                         f"more than {MAX_EVENTS:,} trace events")


class _Shell(msgspec.Struct, frozen=True):
    """A trace document with its event array one view of its bytes."""
    traceEvents: msgspec.Raw
    distributedInfo: Any = None
    deviceProperties: Any = None


class _Lazy(msgspec.Struct, frozen=True):
    """A trace document with its events left undecoded: each a view of its bytes."""
    traceEvents: List[msgspec.Raw]
    distributedInfo: Any = None
    deviceProperties: Any = None


_DOC = msgspec.json.Decoder(_Lazy)
_SHELL = msgspec.json.Decoder(_Shell)
_ONE = msgspec.json.Decoder(msgspec.Raw)
_RAWS = msgspec.json.Decoder(List[msgspec.Raw])
_EVENT = msgspec.json.Decoder(Event)
_VALUE = msgspec.json.Decoder()
_BAD = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
# RecursionError: nested past msgspec's depth (the full parse says)


def kept(e: Event) -> bool:
    """Whether the reader uses the event at all (kernels.from_events): a kernel or a memory
    copy, a launch, a ProfilerStep annotation. The rest (CPU ops, Python frames, flow events:
    most of a trace) is dropped as it is decoded, so that a trace costs the events it keeps."""
    c = e.cat
    if c == "kernel" or c == "gpu_memcpy" or c == "gpu_memset" or c == "cuda_runtime":
        return True
    return (c == "cpu_op" or c == "user_annotation") and type(e.name) is str and \
        e.name.startswith("ProfilerStep#")


def decode(body: bytes) -> Optional[TraceDoc]:
    """A trace document (an object with `traceEvents`, or a bare list of events) from JSON
    bytes, its events those the reader uses (`kept`); None when the bytes are not JSON of that
    shape, or hold a number past a double's range (the full parse takes it as infinite).

    The events are decoded one at a time from views of the bytes: at most one event the reader
    does not use is ever built. An event the schema does not fit (not an object, `args` null or
    not an object) is decoded as plain JSON and brought to the schema's shape as a full parse's
    would be (`from_dict`)."""
    try:
        raws, info, props = _raws(body)
        events = []
        for raw in raws:
            try:
                e = _EVENT.decode(raw)
            except msgspec.ValidationError:
                value = _VALUE.decode(raw)
                if type(value) is not dict:
                    continue
                e = _event(value)
            if kept(e):
                events.append(e)
                if len(events) > MAX_KEPT:
                    raise _too_many(True)
    except _BAD:
        return None
    return TraceDoc(events, info, props)


def _raws(body: bytes):
    """(a view of each element of the event array, distributedInfo, deviceProperties);
    TooManyEvents past MAX_EVENTS elements, counted before a view is made when the commas
    could be that many (a real trace has about 25 an event: most are counted)."""
    bare = body.lstrip()[:1] == b"["
    if body.count(b",") < MAX_EVENTS:
        if bare:
            return _RAWS.decode(body), None, None
        lazy = _DOC.decode(body)
        return lazy.traceEvents, lazy.distributedInfo, lazy.deviceProperties
    if bare:
        array, info, props = _ONE.decode(body), None, None     # the array, as valid JSON
    else:
        shell = _SHELL.decode(body)
        array, info, props = shell.traceEvents, shell.distributedInfo, shell.deviceProperties
    if bytes(memoryview(array)[:1]) == b"[" and \
            jsoncount.elements(array, MAX_EVENTS) > MAX_EVENTS:
        raise _too_many(False)
    return _RAWS.decode(array), info, props


def _event(e: dict) -> Event:
    a = e.get("args")
    args = Args(**{attr: a.get(key) for key, attr in ARG_KEYS}) if type(a) is dict else Args()
    return Event(e.get("ph"), e.get("cat"), e.get("name"), e.get("ts"), e.get("dur"), args)


def from_dict(doc: dict) -> TraceDoc:
    """A fully parsed trace document (a dict with a `traceEvents` list) in the schema's shape:
    events that are not objects are dropped, arguments that are not an object are empty. (Events
    already in the schema's shape, from `parse`, are taken as they are.)"""
    events = [e if type(e) is Event else _event(e) for e in doc["traceEvents"]
              if type(e) is dict or type(e) is Event]
    return TraceDoc(events, doc.get("distributedInfo"), doc.get("deviceProperties"))


# ---- the full parse, streamed ----------------------------------------------------------------
# What json.loads gives, but a trace's events are brought to the schema's shape one at a time
# and only those the reader uses are kept (a full parse held every event as dicts: about 7
# times the file). The document's structure around them is walked here as CPython's scanner
# walks it (Modules/_json.c: the same whitespace, the same errors at the same positions), every
# value inside it parsed by that scanner.
_WS = re.compile(r"[ \t\n\r]*")
_SCAN = json.JSONDecoder().scan_once


def parse(text: str):
    """json.loads(text), exceptions included, except that a trace's events (the elements of a
    top-level array, or of the top-level object's `traceEvents` array) are the `kept` ones,
    as `Event`s; a trace is returned as a TraceDoc."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    i = _WS.match(text, 0).end()
    if text.startswith("[", i):
        events, i = _events(text, i)
        doc = TraceDoc(events)
    elif text.startswith("{", i):
        doc, i = _object(text, i)
        if type(doc.get("traceEvents")) is list:
            doc = from_dict(doc)
    else:
        doc, i = _value(text, i)
    i = _WS.match(text, i).end()
    if i != len(text):
        raise json.JSONDecodeError("Extra data", text, i)
    return doc


def _value(text: str, i: int):
    try:
        return _SCAN(text, i)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None


def _events(text: str, i: int):
    """The kept events of the array at i, and the index after it."""
    out: List[Event] = []
    i = _WS.match(text, i + 1).end()
    if text.startswith("]", i):
        return out, i + 1
    seen = 0
    while True:
        e, i = _value(text, i)
        seen += 1
        if seen > MAX_EVENTS:
            raise _too_many(False)
        if type(e) is dict:
            e = _event(e)
            if kept(e):
                out.append(e)
                if len(out) > MAX_KEPT:
                    raise _too_many(True)
        closed, i = _after(text, i, "]")
        if closed:
            return out, i


def _object(text: str, i: int):
    """The object at i (its `traceEvents` array's kept events only), and the index after it."""
    out: dict = {}
    i = _WS.match(text, i + 1).end()
    if text.startswith("}", i):
        return out, i + 1
    while True:
        if not text.startswith('"', i):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes",
                                       text, i)
        key, i = scanstring(text, i + 1)
        i = _WS.match(text, i).end()
        if not text.startswith(":", i):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, i)
        i = _WS.match(text, i + 1).end()
        out[key], i = _events(text, i) if key == "traceEvents" and text.startswith("[", i) \
            else _value(text, i)
        closed, i = _after(text, i, "}")
        if closed:
            return out, i


def _after(text: str, i: int, close: str):
    """After a member of an array or an object, at i: (True, the index after its `close`) or
    (False, the index of the next member)."""
    i = _WS.match(text, i).end()
    if text.startswith(close, i):
        return True, i + 1
    if not text.startswith(",", i):
        raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
    return False, _WS.match(text, i + 1).end()


__all__ = ["ARG_KEYS", "Args", "Event", "MAX_EVENTS", "MAX_KEPT", "PEER_ATTRS", "TooManyEvents",
           "TraceDoc", "decode", "from_dict", "kept", "parse"]
