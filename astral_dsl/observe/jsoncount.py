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
_OPEN, _CLOSE = np.uint8(ord("[")), np.uint8(ord("]"))
_BRACE, _UNBRACE = np.uint8(ord("{")), np.uint8(ord("}"))
_COMMA, _QUOTE, _BACKSLASH = np.uint8(ord(",")), np.uint8(ord('"')), np.uint8(ord("\\"))


def elements(array, most: int) -> int:
    """The elements of `array`, the bytes (any buffer) of one valid JSON array (its first byte
    `[`, its last `]`); past `most` the count stops at a number above it."""
    data = np.frombuffer(array, np.uint8)
    if _WS.match(memoryview(array), 1).end() == len(data) - 1:
        return 0                                      # `[ ]`
    count, depth, inside, run = 1, 0, False, 0
    for lo in range(0, len(data), CHUNK):
        c = data[lo:lo + CHUNK]
        quotes = np.flatnonzero(c == _QUOTE)
        escaped, run = _escaped(c == _BACKSLASH, run)
        if escaped.size:
            quotes = quotes[~np.isin(quotes, escaped, assume_unique=True)]
        marks = np.flatnonzero((c == _COMMA) | (c == _OPEN) | (c == _CLOSE) | (c == _BRACE)
                               | (c == _UNBRACE))
        # outside a string: an even number of unescaped quotes before it (odd when inside)
        before = np.searchsorted(quotes, marks) + inside
        marks = c[marks[before % 2 == 0]]
        step = ((marks == _OPEN) | (marks == _BRACE)).astype(np.int64) \
            - ((marks == _CLOSE) | (marks == _UNBRACE))
        level = depth + np.cumsum(step) - step        # the depth each mark stands at
        count += int(np.count_nonzero((marks == _COMMA) & (level == 1)))
        depth += int(step.sum())
        inside ^= bool(quotes.size % 2)
        if count > most:
            break
    return count


def _escaped(backslash: np.ndarray, run: int):
    """(the positions of the chunk escaped by a backslash, the length of the run of backslashes
    the chunk ends with); `run`: the previous chunk's."""
    at = np.flatnonzero(backslash)
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
    trailing = int(lengths[-1]) if ends[-1] == len(backslash) - 1 else 0
    return escaped[escaped < len(backslash)], trailing


__all__ = ["elements"]
