"""Reading a JSON document someone else wrote (a fit file, a baseline, a diagnosis, an
inventory): json.loads with every way the text can fail to be read raised as ValueError, which
the callers turn into their diagnostic or usage message.

json.loads raises ValueError for text that is not JSON and for an integer past Python's digit
limit (4,300 digits), but RecursionError for arrays or objects nested past the interpreter's
recursion limit (`[` 200,000 times): that one reached the user as an internal error (E000)."""
from __future__ import annotations

import json
from typing import Any, IO

NESTED = "arrays or objects nested too deeply to read (deeper than any document astral writes)"


def loads(text: str) -> Any:
    """The document `text` holds; ValueError when it cannot be read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(NESTED) from None


def load(fh: IO[str]) -> Any:
    """The document in the open text file `fh`; ValueError when it cannot be read."""
    return loads(fh.read())


__all__ = ["NESTED", "load", "loads"]
