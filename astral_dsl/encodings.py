"""Text in a wide Unicode encoding, which a reader of UTF-8 takes for bytes it cannot read: a
rank log or a trace (observe/load.py) or a runs table (runs/table.py) saved by Windows'
PowerShell 5, whose default is UTF-16, is told as such, with how to convert it, rather than as
an odd byte or a binary file. Imports nothing."""
from __future__ import annotations

from typing import Optional

_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def wide(data: bytes) -> Optional[str]:
    """"UTF-16" or "UTF-32" for text in one of them: by its byte-order mark, or without one by
    a zero byte at every other place of its first 64 (ASCII text in UTF-16) and none at the
    others (a file of zero bytes, what a writer killed before its data reached the disk may
    leave, is not text at all); else None."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            return name
    head = data[:64]
    even, odd = any(head[0::2]), any(head[1::2])
    if len(head) >= 8 and even != odd:
        return "UTF-16 (or UTF-32, without a byte-order mark)"
    return None


__all__ = ["wide"]
