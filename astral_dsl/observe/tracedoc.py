"""A profiler trace document reduced to the fields the trace reader uses.

`decode` parses a trace's bytes with msgspec against this schema: every other field (a real
Kineto kernel carries a dozen more arguments: grid, blocks, registers, occupancy, external id,
...; CPU ops carry call stacks and input shapes) is skipped without building a Python object,
two to four times faster than a full parse of the three real traces of tests/fixtures/traces.
Every field is typed `Any`, so a value of an unexpected type is kept and judged by the reader
(kineto.py), as a full parse would give it. A document the schema does not fit (an event that
is not an object, arguments that are not an object, no `traceEvents`) decodes to None: the
caller parses it in full and `from_dict` brings it to the same shape, so the schema decode and
the full parse meet at one reader. A field given as `null` counts as absent either way."""
from __future__ import annotations

from typing import Any, List, Optional

import msgspec

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


_DOC = msgspec.json.Decoder(TraceDoc)
_EVENTS = msgspec.json.Decoder(List[Event])


def decode(body: bytes) -> Optional[TraceDoc]:
    """A trace document (an object with `traceEvents`, or a bare list of events) from JSON
    bytes; None when the bytes are not JSON of that shape."""
    try:
        if body.lstrip()[:1] == b"[":
            return TraceDoc(_EVENTS.decode(body))
        return _DOC.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None             # RecursionError: nested past msgspec's depth (the full parse says)


def from_dict(doc: dict) -> TraceDoc:
    """A fully parsed trace document (a dict with a `traceEvents` list) in the schema's shape:
    events that are not objects are dropped, arguments that are not an object are empty."""
    events = []
    for e in doc["traceEvents"]:
        if type(e) is not dict:
            continue
        a = e.get("args")
        args = Args(**{attr: a.get(key) for key, attr in ARG_KEYS}) \
            if type(a) is dict else Args()
        events.append(Event(e.get("ph"), e.get("cat"), e.get("name"), e.get("ts"), e.get("dur"),
                            args))
    return TraceDoc(events, doc.get("distributedInfo"), doc.get("deviceProperties"))


__all__ = ["ARG_KEYS", "Args", "Event", "PEER_ATTRS", "TraceDoc", "decode", "from_dict"]
