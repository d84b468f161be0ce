"""The page written whole or not at all (`astral report` and `astral_dsl.report`): a temporary
file of its own beside it (never a file of the user's: `review.html.tmp` was overwritten, then
renamed away), renamed over it, and removed when that fails (the path a folder, a disk full,
Ctrl-C: `review.tmp` was left beside a folder named as the output)."""
from __future__ import annotations

import os
import tempfile


def write_whole(path: str, data: bytes) -> None:
    """Write `data` to `path` whole; OSError (nothing left behind) when it cannot be, naming
    `path`: not the temporary file, a name the caller never gave (`No such file or directory:
    'out/.astral-report-x1y2.tmp'` for a folder `out` that does not exist)."""
    try:
        _write_whole(path, data)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, path) from None     # its subclass, by errno


def _write_whole(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".astral-report-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)          # as open() would create it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:                # a disk full, a folder in the way, Ctrl-C
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
