"""Reading a JSON document someone else wrote (a fit file, a baseline, a diagnosis, an
inventory): json.loads with every way the text can fail to be read raised as ValueError, which
the callers turn into their diagnostic or usage message.

json.loads raises ValueError for text that is not JSON and for an integer past Python's digit
limit (4,300 digits), but RecursionError for arrays or objects nested past the interpreter's
recursion limit (`[` 200,000 times): that one reached the user as an internal error (E000).

`load_path` reads a document a command is given by its path: a regular file of at most
MAX_BYTES (a FIFO blocked the command; `/dev/zero`, or a link to it, filled the memory).

Every number read is finite: json.loads takes `NaN` and `Infinity`, which are not JSON (RFC 8259,
and astral writes none: allow_nan=False), reads 1e400 as an infinity and an integer of 400
digits as an int that float() cannot take (OverflowError: a fit's constant or a diagnosis'
number of that size was an internal error, E000); each is refused here as not a number."""
from __future__ import annotations

import json
from typing import Any

MAX_BYTES = 64 * 1024 * 1024      # a fit, a baseline or a diagnosis is far smaller
NESTED = "arrays or objects nested too deeply to read (deeper than any document astral writes)"


# beyond this many digits an integer is past the largest float (about 1.8e308) whatever they are
_DIGITS = 310


def _too_large(text: str) -> ValueError:
    shown = text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text):,} characters)"
    return ValueError(f"the number {shown} is too large: at most about 1.8e308")


def _float(text: str) -> float:
    value = float(text)
    if value - value != 0:              # 1e400: an infinity
        raise _too_large(text)
    return value


def _int(text: str) -> int:
    # (the digits are counted first: int() of more than 4,300 raises its own ValueError, which
    # tells the user to call sys.set_int_max_str_digits)
    if len(text.lstrip("-")) > _DIGITS:
        raise _too_large(text)
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise _too_large(text) from None
    return value


def _constant(name: str):
    raise ValueError(f"`{name}` is not a number JSON has (RFC 8259): a number is finite")


def loads(text: str) -> Any:
    """The document `text` holds, its numbers finite; ValueError when it cannot be read."""
    try:
        return json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        raise ValueError(NESTED) from None


def load_path(path) -> Any:
    """The document in the file at `path`: OSError when it is not a regular file of at most
    MAX_BYTES or cannot be read, ValueError when it is not UTF-8 JSON (a leading BOM is
    dropped: RFC 8259 lets a reader ignore it, and a Windows editor writes one)."""
    from astral_dsl.regularfile import read_regular

    return loads(read_regular(path, MAX_BYTES).decode("utf-8-sig"))


__all__ = ["MAX_BYTES", "NESTED", "load_path", "loads"]
