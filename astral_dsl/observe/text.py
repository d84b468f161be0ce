"""Text taken from an observed file (a rank log, a profiler trace) as output may hold it."""
from __future__ import annotations


def printable(text: str) -> str:
    """`text` with each lone surrogate (JSON's "\\ud800", which a JSON parser accepts and no
    UTF-8 output can write: the report, the diagnosis JSON and the terminal all failed on it)
    written as its escape, `\\ud800`; any other text unchanged."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
