"""The trace reader's compiled road (_tracescan.c, built by the install: hatch_build.py).

`scan(body)` returns the columns of a profiler trace read by the compiled module, or None: when
the module is not built, was built from other sources than those beside it (a checkout edited
since its install), or declines the document (it then reads on the Python road, which gives the
same result: tests/test_tracescan.py compares both on real, generated and hostile traces)."""
from __future__ import annotations

import hashlib
import os
from typing import Optional

import msgspec

from astral_dsl.observe import tracedoc

# the NCCL arguments the compiled road collects, in tracedoc's order (its Args fields after
# correlation and device)
NCCL_KEYS = tuple(key for key, attr in tracedoc.ARG_KEYS if attr not in ("correlation", "device"))
_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = (os.path.join(_HERE, "_tracescan.c"),
            os.path.join(_HERE, "..", "_vendor", "yyjson", "yyjson.c"),
            os.path.join(_HERE, "..", "_vendor", "yyjson", "yyjson.h"))

_module = None
_checked = False
why_not = ""          # why the compiled road is not available ("" when it is)


def _load():
    global _module, _checked, why_not
    _checked = True
    try:
        from astral_dsl.observe import _tracescan as mod
    except ImportError as exc:
        why_not = f"the compiled trace reader is not built ({exc})"
        return
    try:
        h = hashlib.sha256()
        for path in _SOURCES:
            with open(path, "rb") as fh:
                h.update(fh.read())
    except OSError:                   # an installed wheel without its sources: as built
        _module = mod
        return
    if h.hexdigest() != mod.SOURCE_SHA256:
        why_not = ("the compiled trace reader was built from other sources than these "
                   "(reinstall: pip install -e .)")
        return
    _module = mod


def available() -> bool:
    if not _checked:
        _load()
    return _module is not None


def scan(body: bytes):
    """The compiled road's columns of a trace (see _tracescan.c), its `distributedInfo` and
    `deviceProperties` decoded as the Python road decodes them (msgspec), or None."""
    if not available():
        return None
    out = _module.scan(body, NCCL_KEYS)
    if out is None:
        return None
    try:
        meta = tuple(None if text is None else _ANY.decode(text) for text in out[:2])
    except (RecursionError, msgspec.ValidationError, msgspec.DecodeError):
        return None                 # nested past msgspec's depth, an integer past 64 bits:
        #                             the Python road decides what they mean
    return meta + out[2:]


_ANY = msgspec.json.Decoder()


def version() -> Optional[str]:
    return _module.YYJSON_VERSION if available() else None


__all__ = ["NCCL_KEYS", "available", "scan", "version", "why_not"]
