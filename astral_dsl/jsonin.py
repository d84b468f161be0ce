"""Reading a JSON document someone else wrote (a fit file, a baseline, a diagnosis, an
inventory): json.loads with every way the text can fail to be read raised as ValueError, which
the callers turn into their diagnostic or usage message.

json.loads raises ValueError for text that is not JSON and for an integer past Python's digit
limit (4,300 digits), but RecursionError for arrays or objects nested past the interpreter's
recursion limit (`[` 200,000 times): that one reached the user as an internal error (E000).

`load_path` reads a document a command is given by its path: a regular file of at most
MAX_BYTES (a FIFO blocked the command; `/dev/zero`, or a link to it, filled the memory)."""
from __future__ import annotations

import json
from typing import Any

MAX_BYTES = 64 * 1024 * 1024      # a fit, a baseline or a diagnosis is far smaller
NESTED = "arrays or objects nested too deeply to read (deeper than any document astral writes)"


def loads(text: str) -> Any:
    """The document `text` holds; ValueError when it cannot be read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(NESTED) from None


def load_path(path) -> Any:
    """The document in the file at `path`: OSError when it is not a regular file of at most
    MAX_BYTES or cannot be read, ValueError when it is not UTF-8 JSON."""
    from astral_dsl.regularfile import read_regular

    return loads(read_regular(path, MAX_BYTES).decode("utf-8"))


__all__ = ["MAX_BYTES", "NESTED", "load_path", "loads"]
