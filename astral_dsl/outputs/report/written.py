"""The page written whole or not at all (`astral report` and `astral_dsl.report`), as
outputs/whole.py writes a file: never half a page, never a temporary file left behind, a
device, a pipe or a socket written into."""
from __future__ import annotations

from astral_dsl.outputs.whole import whole


def write_whole(path: str, data: bytes) -> None:
    """Write `data` to `path` whole; OSError (nothing left behind) when it cannot be, naming
    `path`."""
    with whole(path) as fh:
        fh.write(data)
