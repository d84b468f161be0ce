"""How many elements a JSON array holds, counted on its bytes without building them: the trace
reader's budget (tracedoc.MAX_EVENTS) is checked before msgspec builds a view of each element
(56 bytes apiece: a file of 2-byte elements, `0,0,0,...`, cost 28 times its size, and a 400 kB
gzip file inflating to one took 11 GB).

The bytes are scanned by numpy in chunks, carrying from one chunk to the next whether the scan
is inside a string, the nesting depth and the length of a run of backslashes: an element ends
at a comma at depth 1 outside every string. A quote is escaped when an odd run of backslashes
stands before it (a valid JSON text has backslashes only inside strings)."""
from __future__ import annotations

import re

import numpy as np

CHUNK = 1 << 24          # 16 MiB a chunk: the positions found in one cost at most 8 times that
_WS = re.compile(rb"[ \t\n\r]*")
# each byte's kind: 0 none of these, then an opening bracket, a closing one, a comma, a quote, a
# backslash (one pass of a lookup over the chunk, then work on the marked bytes alone)
_OPEN, _CLOSE, _COMMA, _QUOTE, _BACKSLASH = 1, 2, 3, 4, 5
_KIND = np.zeros(256, np.uint8)
for _chars, _kind in ((b"[{", _OPEN), (b"]}", _CLOSE), (b",", _COMMA), (b'"', _QUOTE),
                      (b"\\", _BACKSLASH)):
    _KIND[list(_chars)] = _kind


def elements(array, most: int) -> int:
    """The elements of `array`, the bytes (any buffer) of one valid JSON array (its first byte
    `[`, its last `]`); past `most` the count stops at a number above it."""
    data = np.frombuffer(array, np.uint8)
    if _WS.match(memoryview(array), 1).end() == len(data) - 1:
        return 0                                      # `[ ]`
    count, depth, inside, run = 1, 0, 0, 0
    for lo in range(0, len(data), CHUNK):
        kinds = _KIND[data[lo:lo + CHUNK]]
        at = np.flatnonzero(kinds)
        kind = kinds[at]
        backslash = kind == _BACKSLASH
        if backslash.any() or run:
            escaped, run = _escaped(at[backslash], len(kinds), run)
            keep = ~backslash
            keep[np.isin(at, escaped, assume_unique=True)] = False    # escaped: not a mark
            at, kind = at[keep], kind[keep]
        quote = kind == _QUOTE
        # inside a string: an odd number of quotes before it (its own not counted)
        within = (np.cumsum(quote) - quote + inside) % 2 == 1
        marks = kind[~quote & ~within]
        step = (marks == _OPEN).astype(np.int64) - (marks == _CLOSE)
        level = depth + np.cumsum(step) - step        # the depth each mark stands at
        count += int(np.count_nonzero((marks == _COMMA) & (level == 1)))
        depth += int(step.sum())
        inside = (inside + int(np.count_nonzero(quote))) % 2
        if count > most:
            break
    return count


def _escaped(at: np.ndarray, size: int, run: int):
    """(the positions of a chunk of `size` bytes escaped by a backslash, the length of the run
    of backslashes the chunk ends with); `at`: its backslashes' positions, `run`: the previous
    chunk's."""
    if not at.size:
        return (np.array([0]) if run % 2 else at), 0
    breaks = np.flatnonzero(np.diff(at) != 1)
    starts = np.concatenate((at[:1], at[breaks + 1]))
    ends = np.concatenate((at[breaks], at[-1:]))
    lengths = ends - starts + 1
    if starts[0] == 0:
        lengths[0] += run                             # the previous chunk's run goes on
    escaped = ends[lengths % 2 == 1] + 1
    if run % 2 and starts[0] != 0:
        escaped = np.concatenate(([0], escaped))      # its last backslash escapes our first byte
    trailing = int(lengths[-1]) if ends[-1] == size - 1 else 0
    return escaped[escaped < size], trailing


__all__ = ["elements"]
