"""The numbers of a rank log's cells, read strictly (observe/ranklog.py): whole numbers of
magnitude at most 2^53 (MAX_WHOLE: beyond it a float64, which the columns are read as, no longer
holds every whole number, and 2^63 no longer fits the int64 columns), finite times within
MAX_SECONDS, scalars only, a number written as text with the digits 0-9 alone (float() and
numpy read another script's digits, `١٢` as 12, full-width `８` as 8, and `1_0` as 10: as a
runs table's cell, runs/table.py, such a cell is not a number). Each reader raises ValueError
with what is wrong, for the row's E784."""
from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

import numpy as np

MAX_WHOLE = 2 ** 53
# The largest start or duration a row may state, in seconds: 10^12 s, about 31,700 years. Past
# it the diagnosis's sums and ratios over a job's rows leave a float's range (a duration of
# 1e308 s made a rank's compute time and a phase's spread infinite, which JSON cannot hold:
# E000); such a row is a bad row (E784).
MAX_SECONDS = 1e12
SCALARS = (str, int, float, bool, type(None))
SCALAR_TYPES = frozenset(SCALARS)


def floats_of(values, kinds=None) -> np.ndarray:
    """Strings or numbers -> float64; a missing value ("" fails, None becomes NaN and fails the
    finiteness check), a boolean or a text not in the digits 0-9 (`not_ascii`) is an error.
    `kinds`: the values' types when the caller has them (found here otherwise)."""
    if kinds is None:
        kinds = set(map(type, values))
    if bool in kinds:
        raise ValueError("boolean")
    if str in kinds and any(not_ascii(v) for v in values if type(v) is str):
        raise ValueError("not written with the digits 0-9")
    return np.asarray(values, dtype=np.float64)


def not_ascii(text: str) -> bool:
    """A number's text that float() would read but a reader might not: another script's digits
    (`١٢`, `８`) or a `_` between digits (`1_0`)."""
    return not text.isascii() or "_" in text


def ints_of(values, kinds=None) -> np.ndarray:
    arr = floats_of(values, kinds)
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any() or \
            (np.abs(arr) > MAX_WHOLE).any() or rounded_to_max(values, arr):
        raise ValueError("not whole, or beyond 2^53")
    return arr.astype(np.int64)


def rounded_to_max(values, arr: np.ndarray) -> bool:
    """Whether a whole number past 2^53 was read as 2^53 (float64 rounds 2^53 + 1 down to it):
    the values read as +-2^53, checked as written (a JSON integer or a string of digits)."""
    at = np.flatnonzero(np.abs(arr) == MAX_WHOLE)
    return any(past_whole(values[i]) for i in at.tolist())


def past_whole(v) -> bool:
    """A JSON integer or a number written as text (a CSV cell: `9007199254740993`,
    `9007199254740993.0`, `9.007199254740993e15`) whose magnitude is past 2^53, exactly."""
    if type(v) is int:
        return abs(v) > MAX_WHOLE
    text = str(v).strip()
    if len(text) > 400:             # read as +-2^53 already: no more digits than that needs
        return True
    try:
        return abs(Decimal(text)) > MAX_WHOLE
    except (InvalidOperation, ValueError):
        return False


def whole_number(v, what) -> int:
    f = finite_number(v, what)
    if not f.is_integer():
        raise ValueError(f"`{what}` is not a whole number: {shown(v)}")
    if abs(f) > MAX_WHOLE or (abs(f) == MAX_WHOLE and past_whole(v)):
        raise ValueError(f"`{what}` is beyond 2^53: {shown(v)}")
    return int(f)


def finite_number(v, what) -> float:
    if v is None or v == "":
        raise ValueError(f"`{what}` is missing")
    if isinstance(v, bool):         # a JSON true or false (it was said to be missing)
        raise ValueError(f"`{what}` is not a number: {str(v).lower()}, a JSON yes/no value")
    if type(v) not in SCALARS:
        raise ValueError(f"`{what}` is not a single value: a JSON {json_kind(v)}")
    if type(v) is str and not_ascii(v):
        raise ValueError(f"`{what}` is not a number: {shown(v)}; write it with the digits 0-9")
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"`{what}` is not a number: {shown(v)}") from None
    if not math.isfinite(f):
        raise ValueError(f"`{what}` is not finite: {shown(v)}")
    return f


def seconds_of(v, what) -> float:
    f = finite_number(v, what)
    if abs(f) > MAX_SECONDS:
        raise ValueError(f"`{what}` is beyond 10^12 s: {shown(v)}")
    return f


def shown(v) -> str:
    return repr(str(v)[:40])


def json_kind(v) -> str:
    return "object" if isinstance(v, dict) else "list" if isinstance(v, list) else \
        type(v).__name__
